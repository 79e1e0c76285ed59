// Composition root of the HTTP side: builds the inference/data app and the management app
// from the route table, the handlers and the services.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import cors from 'cors';
import express, { type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { handlers } from '../generated/server/bindings.js';
import type { Authenticator } from './identity/authenticator.js';
import { appServer, type ServerFactory } from './http/entry.js';
import { consoleAssets, CONSOLE_PATH } from './console/assets.js';
import { errorHandler, routeNotFound, type Ports } from './http/errors/middleware.js';
import type { UntypedHandler } from './http/invoke.js';
import { buildRouter, type AdmissionStage } from './http/router.js';
import { requestLogging } from './http/request-log.js';
import { requestRecording } from './http/request-recording.js';
import { compose } from './http/route-table.js';
import { assignTraceId } from './http/trace.js';
import { createValidator, type OperationValidator } from './http/validation.js';
import type { Services } from './services.js';

/**
 * openapi.yaml at the repository root, read at run time: one level up from server/app.ts,
 * two from the bundle `npm run build:server` writes to dist/server/main.js.
 */
export const CONTRACT_PATH = ['../openapi.yaml', '../../openapi.yaml']
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((path) => existsSync(path)) ?? fileURLToPath(new URL('../openapi.yaml', import.meta.url));

export interface AppParts {
  services: Services;
  logger: Logger;
  authenticator: Authenticator;
  admission?: AdmissionStage[];
  /** The listening ports, for a 404 that names the port serving a path (filled in once listening). */
  ports: Readonly<Ports>;
}

/** Paths served outside the contract's operations: the console, on the management port. */
const EXTRA_PATHS = { management: new RegExp(`^${CONSOLE_PATH}(/.*)?$`) };

export async function createApps(parts: AppParts): Promise<{ api: ServerFactory; management: ServerFactory }> {
  // One validator serves both apps: loading and preprocessing the contract is the costly part.
  const validator = await createValidator({ apiSpec: CONTRACT_PATH, validateResponses: parts.services.config.validateResponses });
  return { api: createApp('api', parts, validator), management: createApp('management', parts, validator) };
}

function createApp(api: 'api' | 'management', parts: AppParts, validator: OperationValidator): ServerFactory {
  const { config } = parts.services;
  const app = express();
  // The contract declares no ETag or 304: hashing every answer for one is work for nothing.
  app.set('etag', false);
  // The request's steps, composed into one pipeline that answers every request (http/entry.ts).
  const pipeline = compose([
    assignTraceId,
    requestLogging(app, parts.logger.child({ api })),
    // The console's request log: the API port's requests, when kept at all.
    ...(api === 'api' && parts.services.requestLog.enabled ? [requestRecording(parts.services.requestLog, parts.services.inference.gateway.catalog)] : []),
    // Browsers call the inference API, not the management one.
    ...(api === 'api' && config.corsOrigins.length > 0 ? [corsFor(config.corsOrigins)] : []),
    ...(api === 'management' ? [consoleAssets()] : []),
    buildRouter({
      api,
      handlers: handlers as unknown as Record<keyof typeof handlers, UntypedHandler>,
      services: parts.services,
      authenticator: parts.authenticator,
      validator,
      admission: parts.admission ?? [],
      jsonBodyLimit: config.jsonBodyLimit,
      uploadLimits: { fileSize: config.uploadFileLimit, files: config.uploadMaxFiles, directory: config.uploadTmpDir },
    }),
    routeNotFound(api, parts.ports, EXTRA_PATHS),
  ]);
  return appServer(app, pipeline, errorHandler(api));
}

/** Response headers a browser script may read: the ones the contract and the SDK rely on. */
export const CORS_EXPOSED_HEADERS = [
  'X-Trace-Id',
  'X-Request-Id',
  'Idempotent-Replayed',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-Should-Retry',
  'Deprecation',
  'Sunset',
  'Link',
  'X-Sources-Returned',
  'X-Gateway-Route',
  'X-Cache',
];
/** Request headers beyond the CORS-safelisted ones that callers send. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id', 'X-Response-Cache'];
export const CORS_MAX_AGE_SECONDS = 600;

/**
 * CORS for the allowed origins (`*`: any). A preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) is answered 204 here, before routing; a disallowed origin
 * gets no Access-Control-Allow-Origin, so its browser refuses the call. Bearer keys, not
 * cookies: no credentials mode. Any other OPTIONS goes on to the router's 405.
 */
function corsFor(origins: string[]): RequestHandler {
  const handle = cors({
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE_SECONDS,
    optionsSuccessStatus: 204,
  });
  return (req, res, next) => {
    const preflight = req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
    if (req.method === 'OPTIONS' && !preflight) return next();
    handle(req, res, next);
  };
}
