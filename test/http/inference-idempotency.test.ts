// An Idempotency-Key on an inference operation is kept in a cache, not the database, with the
// same answers as everywhere else: a replay marked as such, 400 for another request.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';

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

describeRedis('Idempotency-Key on inference operations, records in Redis', () => {
  let shared: TestPlatform;
  let redis: Redis;
  beforeAll(async () => {
    shared = await startTestPlatform({ redisUrl: TEST_REDIS_URL });
    redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    await shared?.close();
    await redis?.quit();
  });

  it('keeps the answer as the bytes that were sent, and replays them', async () => {
    const key = randomUUID();
    const answer = () =>
      shared.api('/ai/v2/guarded/chat/completions', {
        method: 'POST',
        headers: { 'idempotency-key': key },
        body: JSON.stringify({ model_family: 'local', messages: [{ role: 'user', content: 'Say "hi"\nand stop.' }] }),
      });
    const first = await answer();
    expect(first.status).toBe(200);
    const sent = await first.text();
    const [recordKey] = await redis.keys(`idempotency:*:${key}`);
    // The record: its claim line, then the answer as sent (not serialized a second time).
    const stored = (await redis.get(recordKey))!;
    expect(stored.slice(stored.lastIndexOf('\n') + 1)).toBe(`{"status":200,"body":${sent}}`);
    const again = await answer();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(sent);
  });
});
