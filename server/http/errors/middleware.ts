// The last middleware of each app: turns anything thrown into the contract's error body.
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { errorCatalog } from '../../../generated/contract/errors.js';
import { routes, type RouteDefinition } from '../../../generated/contract/routes.js';
import { ApiError } from '../../errors.js';
import { deprecationHeaders } from '../deprecation.js';
import { errorSchemaFor, quotable, renderError, toApiError } from './render.js';
import { noteError } from '../request-log.js';
import { traceIdOf } from '../trace.js';
import { isValidatorError, toValidationIssues } from '../validation.js';

type Api = 'api' | 'management';

export const SHOULD_RETRY_HEADER = 'X-Should-Retry';

/** Body-parser failures and validator findings become documented API errors (multer's: see multipart.ts). */
function classify(error: unknown, req: Request): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as { type?: string; status?: number; code?: string; message?: string };
  if (e?.type === 'entity.parse.failed') {
    return new ApiError('INVALID_REQUEST', `Malformed JSON body${e.message?.startsWith('Strings') ? `: ${e.message}` : ''}`, { status: 400 });
  }
  if (e?.type === 'entity.too.large' || e?.status === 413) {
    return new ApiError('PAYLOAD_TOO_LARGE', 'Request body or file is too large');
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported' || e?.status === 415) {
    return new ApiError('INVALID_REQUEST', e.message ?? 'Unsupported media type', { status: 415 });
  }
  if (isValidatorError(error) && error.status === 400) {
    return new ApiError('VALIDATION_ERROR', 'Request validation failed', { issues: toValidationIssues(error.errors, req) });
  }
  if (isValidatorError(error) && error.status === 405) {
    return new ApiError('INVALID_REQUEST', error.message, { status: 405 });
  }
  // Other client errors raised by Express and its parsers (a bad %-escape in a path, a body
  // that is not the gzip it claims to be): their status, in the operation's error shape.
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    return new ApiError('INVALID_REQUEST', e.message ?? 'Bad request', { status: e.status });
  }
  return toApiError(error);
}

/** Operations that declare no 422 report field validation failures as their 400 (e.g. OAuth). */
function asDeclared(error: ApiError, route: RouteDefinition | undefined): ApiError {
  if (error.status !== 422 || !route || route.errorBodies[422] || !route.errorBodies[400]) return error;
  const found = error.options.issues?.[0];
  const first = found && quotable(found);
  const message = first ? `${first.loc.join('.')}: ${first.msg}` : error.message;
  return new ApiError('INVALID_REQUEST', message, { ...error.options, status: 400, gatewayCode: 'invalid_request' });
}

/**
 * Express decodes path parameters while matching, so a path with a broken %-escape fails
 * before any route is chosen. The operation it was meant for is found on the raw path, in
 * route order, so its answer still has the operation's error shape and headers.
 */
function rawPathMatcher(api: Api): (method: string, path: string) => RouteDefinition | undefined {
  const table = routeTable(api);
  return (method, path) => table.find((entry) => entry.route.method === method.toLowerCase() && entry.pattern.test(path))?.route;
}

/** Each route of one port with a pattern for its raw path. */
function routeTable(api: Api) {
  return routes
    .filter((route) => route.api === api)
    .map((route) => ({ route, pattern: new RegExp(`^${route.expressPath.replace(/:[A-Za-z_]+/g, '[^/]+')}/?$`) }));
}

export function errorHandler(api: Api): ErrorRequestHandler {
  const routeOfRawPath = rawPathMatcher(api);
  return (error, req, res, _next) => {
    let route = res.locals.route as RouteDefinition | undefined;
    if (!route && error instanceof URIError) {
      route = routeOfRawPath(req.method, req.path);
      if (route && !res.headersSent) for (const [name, value] of deprecationHeaders(route)) res.setHeader(name, value);
    }
    const apiError = asDeclared(classify(error, req), route);
    const traceId = traceIdOf(res);
    // No line of its own: the request line carries the outcome (request-log.ts).
    noteError(res, apiError);

    if (res.headersSent) {
      // A stream already has its 200: the SSE writer reports in-band; anything else can only be cut.
      res.end();
      return;
    }
    const body = renderError(apiError, errorSchemaFor(route, apiError, api), traceId);
    // OpenAI's SDKs retry every 408, 409, 429 and 5xx unless told: the catalog says which may succeed.
    res.setHeader(SHOULD_RETRY_HEADER, String(errorCatalog[apiError.errorName].retryable));
    for (const [name, value] of Object.entries(apiError.options.headers ?? {})) res.setHeader(name, value);
    res.status(apiError.status);
    if (route?.errorBodies[apiError.status]) {
      res.json(body);
    } else {
      // Statuses the contract does not declare for this operation (413, 501, ...) bypass
      // response validation, which would otherwise reject them.
      res.type('application/json').send(JSON.stringify(body));
    }
  };
}

/** The ports the platform listens on, known once both listen (a port of 0 is chosen then). */
export type Ports = Record<Api, number>;

const PORT_NAME: Record<Api, string> = { api: 'the API port', management: 'the management port' };

/**
 * The last step: no operation of this port serves the request. A path the other port serves
 * (its operations', or `extraPaths` such as the console's) is named with that port, so that
 * `GET :8080/api/v1/health` says where health lives.
 */
export function routeNotFound(api: Api, ports: Readonly<Ports>, extraPaths: Partial<Record<Api, RegExp>> = {}): RequestHandler {
  const other: Api = api === 'api' ? 'management' : 'api';
  const patterns = [...routeTable(other).map((entry) => entry.pattern), ...(extraPaths[other] ? [extraPaths[other]] : [])];
  return (req) => {
    const elsewhere = patterns.some((pattern) => pattern.test(req.path));
    const hint = elsewhere ? `: ${req.path} is served on ${PORT_NAME[other]}, ${ports[other]} (${req.method} :${ports[other]}${req.path})` : '';
    throw new ApiError('NOT_FOUND', `No operation at ${req.method} ${req.path} on ${PORT_NAME[api]}${hint}`);
  };
}
