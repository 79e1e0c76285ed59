// Resolves bearer credentials (API keys `sk_…`, deprecated OAuth access tokens `oat_…`) to
// principals. Resolutions are cached briefly; revocations evict them through the bus, and
// the cache TTL bounds how long a missed revocation can linger (spec: within 60 s).
import { LRUCache } from 'lru-cache';
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Scope } from '../../generated/contract/routes.js';
import type { Authenticator } from '../http/auth.js';
import { hashSecret, KEY_PREFIX, sameDigest } from './credentials.js';
import { OAUTH_TOKEN_PREFIX } from './oauth.js';
import type { Principal } from './principal.js';
import type { RevocationBus } from './revocation.js';

/** How stale `lastUsedAt` may get: writing it on every request would double the database load. */
const LAST_USED_RESOLUTION_MS = 60_000;

interface Resolved {
  principal: Principal;
  /** ms epoch after which the credential stops working, if it expires. */
  expiresAt: number | null;
}

export function createAuthenticator(prisma: PrismaClient, bus: RevocationBus, cacheTtlMs: number): Authenticator {
  // ttl 0 would mean "never expires" to lru-cache; a zero TTL means no caching here.
  const cache = new LRUCache<string, Resolved>({ max: 50_000, ttl: Math.max(cacheTtlMs, 1) });
  bus.subscribe((hashes) => (hashes ? hashes.forEach((h) => cache.delete(h)) : cache.clear()));

  async function resolveKey(hash: string): Promise<Resolved | null> {
    const key = await prisma.apiKey.findUnique({ where: { keyHash: hash } });
    if (!key || !sameDigest(key.keyHash, hash) || key.status !== 'active') return null;
    const now = Date.now();
    if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      // Best effort: a lost update only makes lastUsedAt a little older.
      prisma.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: new Date(now) } }).catch(() => undefined);
    }
    return {
      principal: { kind: 'api_key', credentialId: key.id, organizationId: key.organizationId, scopes: key.scopes as Scope[] },
      expiresAt: key.expiresAt?.getTime() ?? null,
    };
  }

  async function resolveOAuthToken(hash: string): Promise<Resolved | null> {
    const token = await prisma.oAuthAccessToken.findUnique({ where: { tokenHash: hash }, include: { client: true } });
    if (!token || !sameDigest(token.tokenHash, hash) || token.client.status !== 'active') return null;
    const { client } = token;
    return {
      principal: { kind: 'oauth_token', credentialId: client.id, organizationId: client.organizationId, scopes: client.scopes as Scope[] },
      expiresAt: token.expiresAt.getTime(),
    };
  }

  return {
    async authenticate(token) {
      const hash = hashSecret(token);
      let resolved = cache.get(hash);
      if (!resolved) {
        const found = token.startsWith(KEY_PREFIX)
          ? await resolveKey(hash)
          : token.startsWith(OAUTH_TOKEN_PREFIX)
            ? await resolveOAuthToken(hash)
            : null;
        if (!found) return null;
        cache.set(hash, found);
        resolved = found;
      }
      if (resolved.expiresAt !== null && resolved.expiresAt <= Date.now()) {
        cache.delete(hash);
        return null;
      }
      return resolved.principal;
    },
  };
}
