import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Scope } from '../../generated/contract/routes.js';
import type { Authenticator } from '../http/auth.js';
import { hashSecret, KEY_PREFIX, sameDigest } from './credentials.js';
import type { Principal } from './principal.js';

/** How stale `lastUsedAt` may get: writing it on every request would double the database load. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function createApiKeyAuthenticator(prisma: PrismaClient): Authenticator {
  return {
    async authenticate(token: string): Promise<Principal | null> {
      if (!token.startsWith(KEY_PREFIX)) return null;
      const hash = hashSecret(token);
      const key = await prisma.apiKey.findUnique({ where: { keyHash: hash } });
      if (!key || !sameDigest(key.keyHash, hash) || key.status !== 'active') return null;
      const now = Date.now();
      if (key.expiresAt && key.expiresAt.getTime() <= now) return null;
      if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
        // Best effort: a lost update only makes lastUsedAt a little older.
        prisma.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: new Date(now) } }).catch(() => undefined);
      }
      return { kind: 'api_key', credentialId: key.id, organizationId: key.organizationId, scopes: key.scopes as Scope[] };
    },
  };
}
