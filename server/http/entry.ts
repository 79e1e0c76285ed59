// An app's request listener: Express's request and response (their helpers, the app's
// settings, res.locals) around the one composed pipeline, without Express's own router.
// With every step composed (route-table.ts) the router had nothing left to route, yet it
// walked its layer stack per request with closures that live as long as the request: at 64
// concurrent requests ~6 KB a request outlived V8's young generation there (bench:gateway
// --alloc-old), making every scavenge copy it and the major collections come sooner.
import type { RequestListener } from 'node:http';
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';

const nowhere = () => undefined;

/** `pipeline` ends every request itself (its last step answers 404); what it passes on is an error for `onError`. */
export function requestListener(app: Express, pipeline: RequestHandler, onError: ErrorRequestHandler): RequestListener {
  return (incoming, outgoing) => {
    // What Express's app.handle does before it routes.
    Object.setPrototypeOf(incoming, app.request);
    Object.setPrototypeOf(outgoing, app.response);
    const req = incoming as Request;
    const res = outgoing as Response;
    req.res = res;
    res.req = req;
    res.locals = Object.create(null) as Response['locals'];
    // As the router sets them for a top-level app (express-openapi-validator reads originalUrl).
    req.originalUrl = req.url;
    req.baseUrl = '';
    pipeline(req, res, (error?: unknown) => {
      try {
        onError(error, req, res, nowhere);
      } catch (failure) {
        // The error handler itself failed: nothing sensible can be written any more.
        res.destroy(failure as Error);
      }
    });
  };
}
