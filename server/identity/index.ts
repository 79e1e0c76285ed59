import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Authenticator } from '../http/auth.js';
import type { Database } from '../storage/database.js';
import { createApiKeyAuthenticator } from './api-key-authenticator.js';
import { bootstrapIdentity, type BootstrapResult } from './bootstrap.js';

export interface Identity {
  authenticator: Authenticator;
  /** What the first start created, when this start was the first. */
  bootstrap: BootstrapResult | null;
  close(): Promise<void>;
}

export async function createIdentity(deps: { database: Database; config: Config; logger: Logger }): Promise<Identity> {
  const { prisma } = deps.database;
  const bootstrap = await bootstrapIdentity(prisma, deps.logger, deps.config.bootstrapAdminKey);
  return { authenticator: createApiKeyAuthenticator(prisma), bootstrap, close: async () => undefined };
}
