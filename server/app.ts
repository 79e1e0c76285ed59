// Composition root of the HTTP side: builds the inference/data app and the management app
// from the route table, the handlers and the services.
import { fileURLToPath } from 'node:url';
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { handlers } from '../generated/server/bindings.js';
import type { Authenticator } from './identity/authenticator.js';
import { errorHandler, routeNotFound } from './http/error-handler.js';
import type { UntypedHandler } from './http/invoke.js';
import { buildRouter, type AdmissionStage } from './http/router.js';
import { assignTraceId, traceIdOf } from './http/trace.js';
import { createValidator, warmUpValidator } from './http/validation.js';
import type { Services } from './services.js';

export const CONTRACT_PATH = fileURLToPath(new URL('../openapi.yaml', import.meta.url));

export interface AppParts {
  services: Services;
  logger: Logger;
  authenticator: Authenticator;
  admission?: AdmissionStage[];
}

export async function createApps(parts: AppParts): Promise<{ api: Express; management: Express }> {
  // One validator serves both apps: loading and preprocessing the contract is the costly part.
  const validator = createValidator({ apiSpec: CONTRACT_PATH, validateResponses: parts.services.config.validateResponses });
  await warmUpValidator(validator);
  return { api: createApp('api', parts, validator), management: createApp('management', parts, validator) };
}

function createApp(api: 'api' | 'management', parts: AppParts, validator: RequestHandler[]): Express {
  const { config } = parts.services;
  const app = express();
  app.disable('x-powered-by');
  app.use(assignTraceId);
  app.use(
    pinoHttp({
      logger: parts.logger.child({ api }),
      customProps: (_req, res) => ({ traceId: traceIdOf(res as unknown as express.Response) }),
      // Error responses are logged once, with their cause, by the error handler.
      customLogLevel: (_req, res) => (res.statusCode >= 500 ? 'warn' : 'info'),
      customErrorObject: (_req, _res, _error, value) => ({ ...value, err: undefined }),
      serializers: {
        // The path only: a query string may carry what a client should not have put there.
        req: (req: { method: string; url: string }) => ({ method: req.method, path: req.url.split('?')[0] }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    }),
  );
  app.use(
    buildRouter({
      api,
      handlers: handlers as unknown as Record<keyof typeof handlers, UntypedHandler>,
      services: parts.services,
      authenticator: parts.authenticator,
      validator,
      admission: parts.admission ?? [],
      jsonBodyLimit: config.jsonBodyLimit,
      uploadLimits: { fileSize: config.uploadFileLimit, files: config.uploadMaxFiles },
    }),
  );
  app.use(routeNotFound);
  app.use(errorHandler(api));
  return app;
}
