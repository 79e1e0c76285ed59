// API keys through the management API: shown once, stored hashed, listed obfuscated,
// bounded by the creator's scopes, expiring and revocable.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../server/identity/credentials.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

async function createKey(body: object, key?: string) {
  const res = await platform.mgmt('/api/v1/keys', { method: 'POST', body: JSON.stringify(body), key });
  return { res, body: await res.json() };
}

describe('creating a key', () => {
  it('returns the full key once, 201, with at least 256 bits of randomness', async () => {
    const { res, body } = await createKey({ scopes: ['inference'], label: 'ci' });
    expect(res.status).toBe(201);
    const { key, keyPrefix, id, scopes, status, label } = body.data;
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{59}$/); // a 12-byte lookup id and 32 random bytes, base64url
    expect(keyPrefix).toBe(`sk_…${key.slice(-4)}`);
    expect({ scopes, status, label }).toEqual({ scopes: ['inference'], status: 'active', label: 'ci' });
    expect(body.meta.requestId).toBe(res.headers.get('x-trace-id'));

    const row = await platform.services.database.prisma.apiKey.findUniqueOrThrow({ where: { id } });
    expect(row.keyHash).toBe(hashSecret(key));
    expect(JSON.stringify(row)).not.toContain(key);

    const again = await platform.mgmt(`/api/v1/keys/${id}`);
    const text = await again.text();
    expect(again.status).toBe(200);
    expect(text).not.toContain(key);
    expect(JSON.parse(text).data).not.toHaveProperty('key');
  });

  it('never grants scopes beyond the creator key', async () => {
    const { body: narrow } = await createKey({ scopes: ['keys:manage', 'inference'] });
    const { res, body } = await createKey({ scopes: ['keys:manage', 'data:write'] }, narrow.data.key);
    expect(res.status).toBe(403);
    expect(body.error.message).toContain('data:write');
    expect(contractProblems('createKey', 403, body)).toEqual([]);
    const ok = await createKey({ scopes: ['inference'] }, narrow.data.key);
    expect(ok.res.status).toBe(201);
  });

  it('rejects unknown scopes and past expiry with 422', async () => {
    const unknown = await createKey({ scopes: ['root'] });
    expect(unknown.res.status).toBe(422);
    expect(contractProblems('createKey', 422, unknown.body)).toEqual([]);
    const past = await createKey({ scopes: ['inference'], expiresAt: Date.now() - 1000 });
    expect(past.res.status).toBe(422);
    expect(past.body.trace_id).toBeTruthy();
  });

  it('never creates a key that outlives an expiring creator', async () => {
    const soon = Date.now() + 3_600_000;
    const { body: creator } = await createKey({ scopes: ['keys:manage'], expiresAt: soon });
    const later = await createKey({ scopes: ['keys:manage'], expiresAt: soon + 1000 }, creator.data.key);
    expect(later.res.status).toBe(403);
    const inherited = await createKey({ scopes: ['keys:manage'] }, creator.data.key);
    expect(inherited.res.status).toBe(201);
    expect(inherited.body.data.expiresAt).toBe(soon);
  });

  it('refuses an expiry beyond the year 9999 with 422, not a database error', async () => {
    const { res, body } = await createKey({ scopes: ['inference'], expiresAt: 9e15 });
    expect(res.status).toBe(422);
    expect(body.error.details[0].loc).toEqual(['body', 'expiresAt']);
  });

  it('needs keys:manage', async () => {
    const { body } = await createKey({ scopes: ['inference'] });
    const res = await platform.mgmt('/api/v1/keys', { key: body.data.key });
    expect(res.status).toBe(403);
  });
});

describe('using a key', () => {
  it('works for the scopes it has, records lastUsedAt, and stops at expiresAt', async () => {
    const { body } = await createKey({ scopes: ['agents:read'], expiresAt: Date.now() + 1500 });
    const key = body.data.key;
    expect((await platform.mgmt('/api/v1/agents', { key })).status).toBe(200);
    expect((await platform.mgmt('/api/v1/keys', { key })).status).toBe(403);
    await expect
      .poll(async () => (await (await platform.mgmt(`/api/v1/keys/${body.data.id}`)).json()).data.lastUsedAt)
      .toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    expect((await platform.mgmt('/api/v1/agents', { key })).status).toBe(401);
    const view = await (await platform.mgmt(`/api/v1/keys/${body.data.id}`)).json();
    expect(view.data.status).toBe('expired');
  });
});

describe('revoking a key', () => {
  it('takes effect at once on this instance, is idempotent, and keeps the record', async () => {
    const { body } = await createKey({ scopes: ['agents:read'] });
    const key = body.data.key;
    expect((await platform.mgmt('/api/v1/agents', { key })).status).toBe(200); // now cached
    const revoked = await platform.mgmt(`/api/v1/keys/${body.data.id}`, { method: 'DELETE' });
    expect(revoked.status).toBe(200);
    const view = (await revoked.json()).data;
    expect(view.status).toBe('revoked');
    expect(view.revokedAt).toBeGreaterThan(0);
    expect((await platform.mgmt('/api/v1/agents', { key })).status).toBe(401);
    expect((await platform.mgmt(`/api/v1/keys/${body.data.id}`, { method: 'DELETE' })).status).toBe(200);
  });
});

describe('listing keys', () => {
  it('pages through every key, obfuscated, newest first', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: Response = await platform.mgmt(`/api/v1/keys?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      const body = await res.json();
      expect(res.status).toBe(200);
      for (const k of body.data) {
        expect(k).not.toHaveProperty('key');
        expect(k.keyPrefix).toMatch(/^sk_….{4}$/);
        seen.push(k.id);
      }
      expect(body.meta.hasMore).toBe(body.meta.nextCursor !== null);
      cursor = body.meta.nextCursor;
    } while (cursor);
    const all = await platform.services.database.prisma.apiKey.count();
    expect(new Set(seen).size).toBe(all);
  });

  it('answers a forged cursor with a date the database cannot store with 422, as any bad cursor', async () => {
    const cursor = Buffer.from(`-271821-04-20T00:00:00.000Z|${randomUUID()}`).toString('base64url');
    const res = await platform.mgmt(`/api/v1/keys?cursor=${cursor}`);
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.error.code).toBe('invalid_cursor');
    expect(contractProblems('listKeys', 422, body)).toEqual([]);
  });
});

describe('secrets', () => {
  it('never appear in logs or error bodies', async () => {
    const { body } = await createKey({ scopes: ['inference'] });
    const key: string = body.data.key;
    const denied = await platform.mgmt('/api/v1/keys', { key });
    const deniedText = await denied.text();
    expect(deniedText).not.toContain(key);
    expect(deniedText).not.toContain(hashSecret(key));
    const logs = platform.logs.join('\n');
    for (const secret of [key, hashSecret(key), platform.adminKey, hashSecret(platform.adminKey)]) {
      expect(logs).not.toContain(secret);
    }
  });
});

describe('revoking a more powerful key', () => {
  it('is forbidden: a keys:manage key cannot revoke the admin key', async () => {
    const { body: manager } = await createKey({ scopes: ['keys:manage'] });
    const admin = await platform.services.database.prisma.apiKey.findFirstOrThrow({ where: { keyHash: hashSecret(platform.adminKey) } });
    const res = await platform.mgmt(`/api/v1/keys/${admin.id}`, { method: 'DELETE', key: manager.data.key });
    expect(res.status).toBe(403);
    const body = await res.json();
    expect(body).toMatchObject({ error: { code: 'forbidden' }, trace_id: expect.any(String) });
    expect(contractProblems('revokeKey', 403, body)).toEqual([]);
    expect((await platform.services.database.prisma.apiKey.findUniqueOrThrow({ where: { id: admin.id } })).status).toBe('active');

    // A key within its scopes it may revoke.
    const { body: narrow } = await createKey({ scopes: ['keys:manage'] }, manager.data.key);
    const ok = await platform.mgmt(`/api/v1/keys/${narrow.data.id}`, { method: 'DELETE', key: manager.data.key });
    expect(ok.status).toBe(200);
  });
});
