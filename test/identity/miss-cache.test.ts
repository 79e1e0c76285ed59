// Unknown API keys: a lookup id no key has is remembered briefly, so a client hammering with a
// wrong key costs one query per TTL, not one per request; a key created with that lookup id
// afterwards works at once, on the instance that created it and, through Redis, on the others.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PrismaClient } from '../../generated/prisma/client.js';
import { createAuthenticator, MISS_CACHE_TTL_MS } from '../../server/identity/authenticator.js';
import type { NewApiKey } from '../../server/identity/credentials.js';
import { newApiKey } from '../../server/identity/credentials.js';
import { localRevocationBus } from '../../server/identity/revocation.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';

// The next key the platform creates can be chosen, so that it reuses a lookup id tried before.
const chosen = vi.hoisted(() => ({ next: undefined as NewApiKey | undefined }));
vi.mock('../../server/identity/credentials.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../server/identity/credentials.js')>();
  return {
    ...actual,
    newApiKey: () => {
      const key = chosen.next ?? actual.newApiKey();
      chosen.next = undefined;
      return key;
    },
  };
});

/** A database with no keys at all that counts its lookups. */
function emptyDatabase() {
  let lookups = 0;
  const prisma = {
    apiKey: {
      findUnique: async () => {
        lookups++;
        return null;
      },
    },
  } as unknown as PrismaClient;
  return { prisma, lookups: () => lookups };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the miss cache', () => {
  it('asks the database once per unknown lookup id within the TTL', async () => {
    const db = emptyDatabase();
    const auth = createAuthenticator(db.prisma, localRevocationBus(), 60_000, { missTtlMs: 200 });
    const unknown = newApiKey().plaintext;
    for (let i = 0; i < 20; i++) expect(await auth.authenticate(unknown)).toBeNull();
    expect(db.lookups()).toBe(1);
    // Another unknown key is another lookup id: its own query.
    expect(await auth.authenticate(newApiKey().plaintext)).toBeNull();
    expect(db.lookups()).toBe(2);
    // After the TTL the database is asked again.
    await sleep(250);
    expect(await auth.authenticate(unknown)).toBeNull();
    expect(db.lookups()).toBe(3);
  });

  it('is off when credential caching is off', async () => {
    const db = emptyDatabase();
    const auth = createAuthenticator(db.prisma, localRevocationBus(), 0);
    const unknown = newApiKey().plaintext;
    for (let i = 0; i < 3; i++) await auth.authenticate(unknown);
    expect(db.lookups()).toBe(3);
  });

  it('stays bounded in size', async () => {
    const db = emptyDatabase();
    const auth = createAuthenticator(db.prisma, localRevocationBus(), 60_000, { missMax: 2 });
    const [a, b, c] = [newApiKey(), newApiKey(), newApiKey()].map((k) => k.plaintext);
    for (const key of [a, b, c, a]) await auth.authenticate(key);
    expect(db.lookups()).toBe(4); // a was evicted by c
  });

  it('forgets a lookup id when a key is created with it', async () => {
    const db = emptyDatabase();
    const bus = localRevocationBus();
    const auth = createAuthenticator(db.prisma, bus, 60_000);
    const key = newApiKey();
    await auth.authenticate(key.plaintext);
    await auth.authenticate(key.plaintext);
    expect(db.lookups()).toBe(1);
    await bus.publishCreated([key.lookupId]);
    await auth.authenticate(key.plaintext);
    expect(db.lookups()).toBe(2);
  });

  it('does not cache a miss that a creation overtook', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let lookups = 0;
    const prisma = {
      apiKey: {
        findUnique: async () => {
          lookups++;
          if (lookups === 1) await held;
          return null;
        },
      },
    } as unknown as PrismaClient;
    const bus = localRevocationBus();
    const auth = createAuthenticator(prisma, bus, 60_000);
    const key = newApiKey();
    const pending = auth.authenticate(key.plaintext);
    await sleep(10);
    await bus.publishCreated([key.lookupId]);
    release();
    expect(await pending).toBeNull();
    await auth.authenticate(key.plaintext);
    expect(lookups).toBe(2);
  });
});

describe('a key created right after a failed attempt with its lookup id', () => {
  const running: TestPlatform[] = [];
  afterAll(() => Promise.all(running.map((p) => p.close())));

  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
    running.push(platform);
  });

  it('works at once on the same instance', async () => {
    const key = newApiKey();
    expect((await platform.mgmt('/api/v1/health', { key: key.plaintext })).status).toBe(401);
    expect((await platform.mgmt('/api/v1/health', { key: key.plaintext })).status).toBe(401);
    chosen.next = key;
    const res = await platform.mgmt('/api/v1/keys', { method: 'POST', body: JSON.stringify({ scopes: ['inference'] }) });
    expect(res.status).toBe(201);
    expect((await res.json()).data.key).toBe(key.plaintext);
    expect((await platform.mgmt('/api/v1/health', { key: key.plaintext })).status).toBe(200);
  });

  describePostgres('on two instances', () => {
    const database = useTestDatabase('miss-cache');
    describeRedis('with Redis', () => {
      let a: TestPlatform;
      let b: TestPlatform;
      beforeAll(async () => {
        a = await startTestPlatform({ databaseUrl: database.url, redisUrl: TEST_REDIS_URL });
        running.push(a);
        b = await startTestPlatform({ databaseUrl: database.url, redisUrl: TEST_REDIS_URL }, {}, { adminKey: a.adminKey });
        running.push(b);
      }, 120_000);

      it('works on the other instance as soon as the creation reaches it', async () => {
        const key = newApiKey();
        const missed = Date.now();
        expect((await b.mgmt('/api/v1/health', { key: key.plaintext })).status).toBe(401); // b remembers the miss
        chosen.next = key;
        expect((await a.mgmt('/api/v1/keys', { method: 'POST', body: JSON.stringify({ scopes: ['inference'] }) })).status).toBe(201);
        let status = 0;
        while ((status = (await b.mgmt('/api/v1/health', { key: key.plaintext })).status) !== 200 && Date.now() - missed < MISS_CACHE_TTL_MS) await sleep(10);
        // Accepted while b still holds the miss: only the creation message can have cleared it
        // (after the TTL the miss would expire by itself, which proves nothing).
        expect(status).toBe(200);
        expect(Date.now() - missed).toBeLessThan(MISS_CACHE_TTL_MS);
      });
    });
  });
});
