// Binds every operation of the route table to its pipeline:
// route facts → authentication → body parsing → contract validation → admission → handler.
import express, { type RequestHandler } from 'express';
import { routes, type OperationId, type RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { Services } from '../services.js';
import type { Authenticator } from '../identity/authenticator.js';
import { authenticate } from './auth.js';
import { refuseDeepBodies } from './body-depth.js';
import { deprecationHeaders } from './deprecation.js';
import { invoke, type UntypedHandler } from './invoke.js';
import { parseMultipart, type UploadLimits } from './multipart.js';
import { onResponseEnd } from './response-end.js';
import { RouteTable } from './route-table.js';
import type { OperationValidator } from './validation.js';

/**
 * A step that runs for every operation after the request is authenticated and valid, and
 * before its handler: where billing admission, spending caps and rate limits plug in. A
 * stage that settles afterwards (usage, idempotency) registers an `onResponseEnd` hook
 * (response-end.ts), as http/admission/idempotency.ts does.
 */
export type AdmissionStage = (route: RouteDefinition) => RequestHandler;

export interface RouterOptions {
  api: RouteDefinition['api'];
  handlers: Readonly<Record<OperationId, UntypedHandler>>;
  services: Services;
  authenticator: Authenticator;
  validator: OperationValidator;
  admission: AdmissionStage[];
  jsonBodyLimit: number;
  uploadLimits: UploadLimits;
}

export function buildRouter(options: RouterOptions): RequestHandler {
  const table = new RouteTable();
  const parsers: Record<string, RequestHandler[]> = {
    'application/json': [express.json({ limit: options.jsonBodyLimit, verify: rejectUnstorable }), refuseDeepBodies],
    // Flat: `extended: false` makes no nested objects.
    'application/x-www-form-urlencoded': [express.urlencoded({ extended: false, limit: options.jsonBodyLimit })],
  };
  // An operation without a body gets no parsing step at all.
  const bodyParser = (route: RouteDefinition): RequestHandler[] => {
    if (route.requestMediaType === 'multipart/form-data') return [parseMultipart(route, options.uploadLimits)];
    return (route.requestMediaType && parsers[route.requestMediaType]) || [];
  };
  for (const route of routes) {
    if (route.api !== options.api) continue;
    table.add(route.method.toUpperCase(), route.expressPath, [
      describeRoute(route, options.services.metrics),
      authenticate(route, options.authenticator),
      ...bodyParser(route),
      ...options.validator(route),
      ...options.admission.map((stage) => stage(route)),
      invoke(route, options.handlers[route.operationId], options.services),
    ]);
  }
  // A known path asked with another method (OPTIONS included) is a 405 naming the allowed ones.
  return table.handler((methods) => (req) => {
    throw new ApiError('INVALID_REQUEST', `${req.method} is not allowed here; use ${methods.join(', ')}`, {
      status: 405,
      gatewayCode: 'method_not_allowed',
      headers: { Allow: methods.join(', ') },
    });
  });
}

const ESCAPE = '\\u';
const BACKSLASH = 0x5c;

const malformed = (message: string) =>
  // Reported as a parse failure (400), not as body-parser's default 403 for a failed check.
  Object.assign(new Error(message), { status: 400, type: 'entity.parse.failed' });

/** The code unit of the `\uXXXX` escape at `at`, or -1 when none is there. */
function escapeAt(body: Buffer, at: number): number {
  if (body[at] !== BACKSLASH || body[at + 1] !== 0x75) return -1;
  const hex = body.toString('latin1', at + 2, at + 6);
  return /^[0-9a-fA-F]{4}$/.test(hex) ? Number.parseInt(hex, 16) : -1;
}

/**
 * PostgreSQL text cannot hold NUL, nor UTF-8 can a lone surrogate, so a body with either in
 * a string is refused as malformed up front. Checked on the raw bytes, once, rather than by a
 * reviver called for every value: raw bytes can hold neither (a raw NUL is invalid JSON, and
 * UTF-8 has no surrogates), so only escapes need finding, and `\u` is one unless its
 * backslash is itself escaped (`\\u0000` is the text "\u0000").
 */
function rejectUnstorable(_req: unknown, _res: unknown, raw: Buffer, encoding: string): void {
  const body = /^utf-?8$/i.test(encoding) ? raw : Buffer.from(new TextDecoder(encoding).decode(raw));
  for (let at = body.indexOf(ESCAPE); at !== -1; at = body.indexOf(ESCAPE, at + 1)) {
    let backslashes = 1;
    while (body[at - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) continue;
    const unit = escapeAt(body, at);
    if (unit === 0) throw malformed('Strings must not contain NUL (\\u0000) characters');
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const low = escapeAt(body, at + 6);
      if (low < 0xdc00 || low > 0xdfff) throw malformed('Strings must not contain unpaired surrogates (\\ud800-\\udfff)');
      at += 6;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      throw malformed('Strings must not contain unpaired surrogates (\\ud800-\\udfff)');
    }
  }
}

/** Remembers the matched operation (error bodies depend on it), flags deprecated ones and counts the answer. */
function describeRoute(route: RouteDefinition, metrics: Metrics): RequestHandler {
  const headers = deprecationHeaders(route);
  const labels = { api: route.api, operation: route.operationId };
  return (_req, res, next) => {
    res.locals.route = route;
    for (const [name, value] of headers) res.setHeader(name, value);
    onResponseEnd(res, () => {
      if (res.writableFinished) metrics.requests.inc({ ...labels, status: res.statusCode });
    });
    next();
  };
}
