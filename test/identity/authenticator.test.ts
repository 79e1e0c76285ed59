// The credential cache: a revocation that lands while a lookup is in flight is not undone by
// that lookup caching a stale answer, and a key is found by its lookup id but accepted only
// when the whole key matches.
import { describe, expect, it } from 'vitest';
import type { PrismaClient } from '../../generated/prisma/client.js';
import { createAuthenticator } from '../../server/identity/authenticator.js';
import { newApiKey } from '../../server/identity/credentials.js';
import { localRevocationBus } from '../../server/identity/revocation.js';

function fakeDatabase(key: ReturnType<typeof newApiKey>) {
  let release: (() => void) | undefined;
  let lookups = 0;
  const row = {
    id: 'k1',
    organizationId: 'o1',
    lookupId: key.lookupId,
    keyHash: key.hash,
    scopes: ['inference'],
    status: 'active',
    expiresAt: null,
    lastUsedAt: new Date(),
    allowedModels: [],
    weeklyCapMicros: null,
    creditSharePercent: null,
  };
  const prisma = {
    apiKey: {
      // Reads the row when called; the first read is held until release(), like a slow query.
      findUnique: async ({ where }: { where: { lookupId: string } }) => {
        lookups++;
        const snapshot = where.lookupId === row.lookupId ? { ...row } : null;
        if (release === undefined) await new Promise<void>((resolve) => (release = resolve));
        return snapshot;
      },
      update: async () => row,
    },
  } as unknown as PrismaClient;
  return { prisma, row, lookups: () => lookups, release: () => release?.() };
}

describe('authenticator', () => {
  it('does not cache a lookup that a revocation overtook', async () => {
    const key = newApiKey();
    const db = fakeDatabase(key);
    const bus = localRevocationBus();
    const auth = createAuthenticator(db.prisma, bus, 60_000);
    const pending = auth.authenticate(key.plaintext);
    await new Promise((resolve) => setTimeout(resolve, 10));
    db.row.status = 'revoked';
    await bus.publish([key.hash]);
    db.release();
    expect(await pending).not.toBeNull(); // it started before the revocation...
    expect(await auth.authenticate(key.plaintext)).toBeNull(); // ...but was not cached
    expect(db.lookups()).toBe(2);
  });

  it('caches a settled lookup until a revocation evicts it', async () => {
    const key = newApiKey();
    const db = fakeDatabase(key);
    const bus = localRevocationBus();
    const auth = createAuthenticator(db.prisma, bus, 60_000);
    const first = auth.authenticate(key.plaintext);
    db.release();
    expect(await first).toMatchObject({ organizationId: 'o1', scopes: ['inference'] });
    expect(await auth.authenticate(key.plaintext)).not.toBeNull();
    expect(db.lookups()).toBe(1);
    await bus.publish([key.hash]);
    db.row.status = 'revoked';
    expect(await auth.authenticate(key.plaintext)).toBeNull();
  });

  it('rejects a key whose lookup id matches but whose secret does not', async () => {
    const key = newApiKey();
    const db = fakeDatabase(key);
    const auth = createAuthenticator(db.prisma, localRevocationBus(), 60_000);
    const forged = `${key.plaintext.slice(0, -4)}${key.plaintext.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const pending = auth.authenticate(forged);
    db.release();
    expect(await pending).toBeNull();
    expect(await auth.authenticate('sk_short')).toBeNull();
  });
});
