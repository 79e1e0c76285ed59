// The request log's stage on the API port: when a response is over, its line (trace id,
// operation, status, latency, route taken, the error's name) and, once billing has settled
// it, what its model calls came to (model, provider, tokens, cost, and the route for an
// error answer, which carries no X-Gateway-Route header) go to the request log's
// writer, which batches them to the database (observability/request-log-writer.ts). Nothing
// here waits on the request's path. Requests without a caller (refused before a key was
// read) belong to no organization and are not logged.
import type { RequestHandler } from 'express';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import type { Settlement } from '../billing/reservations.js';
import type { Catalog } from '../gateway/catalog.js';
import { ROUTE_HEADER } from '../gateway/route-header.js';
import type { Principal } from '../identity/principal.js';
import type { RequestLog } from '../observability/request-log.js';
import { onResponseEnd } from './response-end.js';
import { traceIdOf } from './trace.js';

/** A kept request body is cut here: enough to see what was asked. */
export const LOGGED_BODY_MAX = 16 * 1024;

export function requestRecording(log: RequestLog, catalog: Catalog): RequestHandler {
  return (req, res, next) => {
    const arrived = Date.now();
    const started = performance.now();
    onResponseEnd(res, () => {
      const principal = res.locals.principal as Principal | undefined;
      if (!principal) return;
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      const route = res.getHeader(ROUTE_HEADER);
      const row = {
        organizationId: principal.organizationId,
        apiKeyId: principal.kind === 'api_key' ? principal.credentialId : null,
        traceId: traceIdOf(res),
        at: new Date(arrived),
        method: req.method,
        path: req.path,
        operation: (res.locals.route as RouteDefinition | undefined)?.operationId ?? null,
        status: res.statusCode,
        latencyMs,
        route: typeof route === 'string' ? route : null,
        model: null as string | null,
        provider: null as string | null,
        inputTokens: 0,
        outputTokens: 0,
        costMicros: 0n,
        error: (res.locals.outcome as { error?: string } | undefined)?.error ?? null,
        requestBody: log.keepBodies ? bodyOf(req.body) : null,
      };
      const settlement = res.locals.settlement as Promise<Settlement | null> | undefined;
      if (!settlement) return log.record(row);
      void settlement.then((settled) => {
        if (settled) {
          // An error answer carries no X-Gateway-Route: the attempts still say what was tried.
          row.route ??= settled.route;
          const asked = settled.model === null ? catalogModel(catalog, req.body) : null;
          row.model = settled.model ?? asked?.model ?? null;
          row.provider = settled.provider ?? asked?.provider ?? null;
          row.inputTokens = settled.inputTokens;
          row.outputTokens = settled.outputTokens;
          row.costMicros = settled.costMicros;
        }
        log.record(row);
      });
    });
    next();
  };
}

/**
 * The catalog model a request asked for, with the provider of its first deployment: what the
 * log shows when no upstream was tried (an open circuit). A name the catalog does not know is
 * not kept: it is the caller's text, and says nothing about a model.
 */
function catalogModel(catalog: Catalog, body: unknown): { model: string; provider: string | null } | null {
  const name = (body as { model?: unknown } | undefined)?.model;
  const model = typeof name === 'string' ? catalog.models.get(name) : undefined;
  if (!model) return null;
  return { model: model.id, provider: catalog.deployments.get(model.deployments[0] ?? '')?.provider ?? null };
}

function bodyOf(body: unknown): string | null {
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0)) return null;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text.length > LOGGED_BODY_MAX ? `${text.slice(0, LOGGED_BODY_MAX)}…` : text;
}
