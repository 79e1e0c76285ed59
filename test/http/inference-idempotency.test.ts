// An Idempotency-Key on an inference operation is kept in a cache, not the database, with the
// same answers as everywhere else: a replay marked as such, 400 for another request.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

// A model the catalog does not serve: the operation's own 400, which is kept like any 4xx it answers.
const complete = (key: string, content = 'hi') =>
  platform.api('/ai/v2/guarded/chat/completions', {
    method: 'POST',
    headers: { 'idempotency-key': key },
    body: JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content }] }),
  });

describe('Idempotency-Key on inference operations', () => {
  it('replays without a database record, and refuses the key for another request', async () => {
    const records = () => platform.services.database.prisma.idempotencyRecord.count();
    const before = await records();
    const key = randomUUID();
    const first = await complete(key);
    expect(first.status).toBe(400);
    const again = await complete(key);
    expect(again.status).toBe(400);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await again.json()).error).toEqual((await first.json()).error);
    const reused = await complete(key, 'something else');
    expect(reused.status).toBe(400);
    expect((await reused.json()).error.message).toContain('different request');
    expect(await records()).toBe(before);
  });
});
