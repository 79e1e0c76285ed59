// The request span (observability/tracing.ts): opened as the request is admitted (after
// authentication: an unauthenticated request is not traced), ended when its response
// closes with the status. Installed only when tracing is on.
import type { Tracing } from '../../observability/tracing.js';
import { onResponseEnd } from '../response-end.js';
import type { AdmissionStage } from '../router.js';
import { traceIdOf } from '../trace.js';

export function tracingStage(tracing: Tracing): AdmissionStage {
  return (route) => (_req, res, next) => {
    const method = route.method.toUpperCase();
    const trace = tracing.request(`${method} ${route.path}`, {
      'http.request.method': method,
      'http.route': route.path,
      'gateway.operation': route.operationId,
      // The id in X-Trace-Id and the logs, to find the trace from a support request.
      'gateway.trace_id': traceIdOf(res),
    });
    if (trace) {
      res.locals.trace = trace;
      onResponseEnd(res, () => {
        trace.set({ 'http.response.status_code': res.statusCode });
        trace.end();
      });
    }
    next();
  };
}
