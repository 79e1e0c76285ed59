// Resolves bearer credentials (API keys `sk_…`, deprecated OAuth access tokens `oat_…`) to
// principals. Resolutions are cached briefly; revocations (and changes of a key's limits)
// evict them through the bus, and the cache TTL bounds how long a missed one can linger
// (spec: within 60 s).
import { LRUCache } from 'lru-cache';
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Scope } from '../../generated/contract/routes.js';
import { hashSecret, lookupIdOf, sameDigest } from './credentials.js';
import { OAUTH_TOKEN_PREFIX } from './oauth.js';
import { ModelAccess } from './model-access.js';
import type { Principal } from './principal.js';
import type { RevocationBus } from './revocation.js';

export interface Authenticator {
  /** The principal for a bearer credential, or null when it is unknown, revoked or expired. */
  authenticate(token: string): Promise<Principal | null>;
}

/** How stale `lastUsedAt` may get: writing it on every request would double the database load. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface AuthenticatorOptions {
  /** How long a lookup id with no key is remembered as unknown (default 5 s, never beyond the credential cache TTL). */
  missTtlMs?: number;
  /** How many unknown lookup ids are remembered (default 10 000; the least recently asked go first). */
  missMax?: number;
}

export const MISS_CACHE_TTL_MS = 5_000;

export function createAuthenticator(prisma: PrismaClient, bus: RevocationBus, cacheTtlMs: number, options: AuthenticatorOptions = {}): Authenticator {
  // ttl 0 would mean "never expires" to lru-cache; a zero TTL means no caching here.
  const cache = new LRUCache<string, Principal>({ max: 50_000, ttl: Math.max(cacheTtlMs, 1) });
  // Lookup ids no key has: a client retrying with a wrong or deleted key, or random keys,
  // would otherwise cost a query each. Only absence is remembered, so revocation is
  // unaffected; a key created with a remembered lookup id evicts it through the bus.
  const missTtlMs = Math.min(options.missTtlMs ?? MISS_CACHE_TTL_MS, cacheTtlMs);
  const misses = new LRUCache<string, true>({ max: options.missMax ?? 10_000, ttl: Math.max(missTtlMs, 1) });
  // Bumped by every creation: a lookup that started before one must not cache its miss.
  let creations = 0;
  bus.subscribeCreated((lookupIds) => {
    creations++;
    if (lookupIds) lookupIds.forEach((id) => misses.delete(id));
    else misses.clear();
  });
  // Bumped by every revocation: a lookup that started before one must not cache its result,
  // or a credential revoked meanwhile would come back to life until the TTL ran out.
  let epoch = 0;
  bus.subscribe((hashes) => {
    epoch++;
    if (hashes) hashes.forEach((h) => cache.delete(h));
    else cache.clear();
  });

  async function resolveKey(token: string, hash: string): Promise<Principal | null> {
    const lookupId = lookupIdOf(token);
    if (!lookupId || misses.has(lookupId)) return null;
    const startedAt = creations;
    const key = await prisma.apiKey.findUnique({ where: { lookupId } });
    if (!key) {
      if (missTtlMs > 0 && creations === startedAt) misses.set(lookupId, true);
      return null;
    }
    if (!sameDigest(key.keyHash, hash) || key.status !== 'active') return null;
    const now = Date.now();
    if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      // Best effort: a lost update only makes lastUsedAt a little older.
      prisma.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: new Date(now) } }).catch(() => undefined);
    }
    return {
      kind: 'api_key',
      credentialId: key.id,
      organizationId: key.organizationId,
      scopes: key.scopes as Scope[],
      expiresAt: key.expiresAt?.getTime() ?? null,
      models: ModelAccess.of(key.allowedModels),
      spendLimited: key.weeklyCapMicros !== null || key.creditSharePercent !== null,
    };
  }

  /** Deprecated tokens are 256-bit random values looked up by hash (there is no lookup id to split off). */
  async function resolveOAuthToken(hash: string): Promise<Principal | null> {
    const token = await prisma.oAuthAccessToken.findUnique({ where: { tokenHash: hash }, include: { client: true } });
    if (!token || token.client.status !== 'active') return null;
    const { client } = token;
    return {
      kind: 'oauth_token',
      credentialId: client.id,
      organizationId: client.organizationId,
      scopes: client.scopes as Scope[],
      expiresAt: token.expiresAt.getTime(),
    };
  }

  return {
    async authenticate(token) {
      const hash = hashSecret(token);
      let principal = cache.get(hash);
      if (!principal) {
        const startedAt = epoch;
        const found = token.startsWith(OAUTH_TOKEN_PREFIX) ? await resolveOAuthToken(hash) : await resolveKey(token, hash);
        if (!found) return null;
        if (epoch === startedAt) cache.set(hash, found);
        principal = found;
      }
      if (principal.expiresAt !== null && principal.expiresAt <= Date.now()) {
        cache.delete(hash);
        return null;
      }
      return principal;
    },
  };
}
