// Composition root of the HTTP side: builds the inference/data app and the management app
// from the route table, the handlers and the services.
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { handlers } from '../generated/server/bindings.js';
import type { Authenticator } from './identity/authenticator.js';
import { errorHandler, routeNotFound } from './http/error-handler.js';
import type { UntypedHandler } from './http/invoke.js';
import { buildRouter, type AdmissionStage } from './http/router.js';
import { requestLogging } from './http/request-log.js';
import { assignTraceId } from './http/trace.js';
import { createValidator, type OperationValidator } from './http/validation.js';
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
  const validator = await createValidator({ apiSpec: CONTRACT_PATH, validateResponses: parts.services.config.validateResponses });
  return { api: createApp('api', parts, validator), management: createApp('management', parts, validator) };
}

function createApp(api: 'api' | 'management', parts: AppParts, validator: OperationValidator): Express {
  const { config } = parts.services;
  const app = express();
  app.disable('x-powered-by');
  // The contract declares no ETag or 304: hashing every answer for one is work for nothing.
  app.set('etag', false);
  app.use(assignTraceId);
  app.use(requestLogging(app, parts.logger.child({ api })));
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
