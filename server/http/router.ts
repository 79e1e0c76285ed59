// Binds every operation of the route table to its pipeline:
// route facts → authentication → body parsing → contract validation → admission → handler.
import express, { type RequestHandler, type Router } from 'express';
import { routes, type OperationId, type RouteDefinition } from '../../generated/contract/routes.js';
import type { Services } from '../services.js';
import { authenticate, type Authenticator } from './auth.js';
import { invoke, type UntypedHandler } from './invoke.js';
import { parseMultipart, type UploadLimits } from './multipart.js';

/**
 * A step that runs for every operation after the request is authenticated and valid, and
 * before its handler: where billing admission, spending caps and rate limits plug in.
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
  const router = express.Router();
  const parsers: Record<string, RequestHandler> = {
    'application/json': express.json({ limit: options.jsonBodyLimit }),
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
  return router;
}

/** Remembers the matched operation (error bodies depend on it) and flags deprecated ones. */
function describeRoute(route: RouteDefinition): RequestHandler {
  const successor = route.replacedBy ? routes.find((r) => r.operationId === route.replacedBy) : undefined;
  const headers: [string, string][] = [];
  if (route.deprecated) {
    headers.push(['Deprecation', route.deprecatedAt ? `@${Math.floor(Date.parse(route.deprecatedAt) / 1000)}` : 'true']);
    if (route.sunset) headers.push(['Sunset', new Date(route.sunset).toUTCString()]);
    if (successor) headers.push(['Link', `<${successor.path}>; rel="successor-version"`]);
  }
  return (_req, res, next) => {
    res.locals.route = route;
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
