// Binds every operation of the route table to its pipeline:
// route facts → authentication → body parsing → contract validation → admission → handler.
import express, { type RequestHandler, type Router } from 'express';
import { routes, type OperationId, type RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import type { Authenticator } from '../identity/authenticator.js';
import { authenticate } from './auth.js';
import { deprecationHeaders } from './deprecation.js';
import { invoke, type UntypedHandler } from './invoke.js';
import { parseMultipart, type UploadLimits } from './multipart.js';

/**
 * A step that runs for every operation after the request is authenticated and valid, and
 * before its handler: where billing admission, spending caps and rate limits plug in. A
 * stage that settles afterwards (usage, idempotency) listens for the response's `close`
 * event, as http/idempotency.ts does.
 */
export type AdmissionStage = (route: RouteDefinition) => RequestHandler;

export interface RouterOptions {
  api: RouteDefinition['api'];
  handlers: Readonly<Record<OperationId, UntypedHandler>>;
  services: Services;
  authenticator: Authenticator;
  validator: RequestHandler[];
  admission: AdmissionStage[];
  jsonBodyLimit: number;
  uploadLimits: UploadLimits;
}

export function buildRouter(options: RouterOptions): Router {
  const router = express.Router({ caseSensitive: true });
  const parsers: Record<string, RequestHandler> = {
    'application/json': express.json({ limit: options.jsonBodyLimit, reviver: rejectNul }),
    'application/x-www-form-urlencoded': express.urlencoded({ extended: false, limit: options.jsonBodyLimit }),
  };
  const none: RequestHandler = (_req, _res, next) => next();
  const bodyParser = (route: RouteDefinition) =>
    route.requestMediaType === 'multipart/form-data'
      ? parseMultipart(route, options.uploadLimits)
      : (route.requestMediaType && parsers[route.requestMediaType]) || none;
  for (const route of routes) {
    if (route.api !== options.api) continue;
    router[route.method](
      route.expressPath,
      describeRoute(route),
      authenticate(route, options.authenticator),
      bodyParser(route),
      ...options.validator,
      ...options.admission.map((stage) => stage(route)),
      invoke(route, options.handlers[route.operationId], options.services),
    );
  }
  // A known path asked with another method (OPTIONS included) is a 405 naming the allowed ones.
  const allowed = new Map<string, string[]>();
  for (const route of routes.filter((r) => r.api === options.api)) {
    allowed.set(route.expressPath, [...(allowed.get(route.expressPath) ?? []), route.method.toUpperCase()]);
  }
  for (const [path, methods] of allowed) {
    router.all(path, (req) => {
      throw new ApiError('INVALID_REQUEST', `${req.method} is not allowed here; use ${methods.join(', ')}`, {
        status: 405,
        gatewayCode: 'method_not_allowed',
        headers: { Allow: methods.join(', ') },
      });
    });
  }
  return router;
}

/** PostgreSQL text cannot hold NUL, so a string with one is refused as malformed up front. */
function rejectNul(_key: string, value: unknown): unknown {
  if (typeof value === 'string' && value.includes('\u0000')) throw new Error('Strings must not contain NUL (\\u0000) characters');
  return value;
}

/** Remembers the matched operation (error bodies depend on it) and flags deprecated ones. */
function describeRoute(route: RouteDefinition): RequestHandler {
  const headers = deprecationHeaders(route);
  return (_req, res, next) => {
    res.locals.route = route;
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
