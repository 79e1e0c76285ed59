// The identity area: who callers are (authenticator), their keys, OAuth clients and
// organizations, and the first-start bootstrap.
import type { Logger } from 'pino';
import type { Authenticator } from './authenticator.js';
import type { Database } from '../storage/database.js';
import type { RedisConnections } from '../storage/redis.js';
import { ApiKeyService } from './api-keys.js';
import { createAuthenticator } from './authenticator.js';
import { OAuthService } from './oauth.js';
import { OrganizationService } from './organizations.js';
import { localRevocationBus, redisRevocationBus } from './revocation.js';

export interface Identity {
  authenticator: Authenticator;
  keys: ApiKeyService;
  oauth: OAuthService;
  organizations: OrganizationService;
  close(): Promise<void>;
}

export interface IdentityDeps {
  database: Database;
  redis: RedisConnections | null;
  logger: Logger;
  credentialCacheTtlMs: number;
}

export async function createIdentity({ database, redis, logger, credentialCacheTtlMs }: IdentityDeps): Promise<Identity> {
  const { prisma } = database;
  const revocations = redis ? await redisRevocationBus(redis, logger) : localRevocationBus();
  return {
    authenticator: createAuthenticator(prisma, revocations, credentialCacheTtlMs),
    keys: new ApiKeyService(prisma, revocations),
    oauth: new OAuthService(prisma, revocations),
    organizations: new OrganizationService(prisma),
    close: () => revocations.close(),
  };
}
