// The inference idempotency caches keep the database store's semantics: first claim runs,
// a repeat waits (in progress) or replays, another request with the key is a mismatch,
// only the claim that wrote a record settles it, and records expire.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore, RedisIdempotencyStore } from '../../server/storage/idempotency-cache.js';
import type { ClaimRequest, IdempotencyRecords } from '../../server/storage/idempotency-store.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';

const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  organizationId: randomUUID(),
  key: randomUUID(),
  operationId: 'createGuardedChatCompletion',
  requestHash: 'a'.repeat(64),
  ...overrides,
});
const body = { id: 'chatcmpl_1', text: 'line\nbreak' };
const answer = { status: 200, body, json: JSON.stringify(body), bytes: 40 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function behavesLikeTheDatabaseStore(store: () => IdempotencyRecords, shortLived: () => IdempotencyRecords): void {
  it('claims a new key once, then reports it in progress, then replays its answer', async () => {
    const claim = request();
    const first = await store().claim(claim);
    expect(first.kind).toBe('new');
    expect(await store().claim(claim)).toEqual({ kind: 'in_progress' });
    await store().complete((first as { recordId: string }).recordId, answer);
    expect(await store().claim(claim)).toEqual({ kind: 'replay', status: 200, body: answer.body });
    expect(await store().inspect(claim)).toEqual({ kind: 'replay', status: 200, body: answer.body });
  });

  it('reports another request with the same key as a mismatch, per organization', async () => {
    const claim = request();
    await store().claim(claim);
    expect(await store().claim({ ...claim, requestHash: 'b'.repeat(64) })).toEqual({ kind: 'mismatch' });
    expect(await store().claim({ ...claim, operationId: 'createEmbeddings' })).toEqual({ kind: 'mismatch' });
    expect((await store().claim({ ...claim, organizationId: randomUUID() })).kind).toBe('new');
  });

  it('frees a released key, and ignores a stale claim settling a newer record', async () => {
    const claim = request();
    const first = (await store().claim(claim)) as { recordId: string };
    await store().release(first.recordId);
    expect(await store().inspect(claim)).toBeNull();
    const second = (await store().claim(claim)) as { recordId: string };
    await store().release(first.recordId);
    await store().complete(first.recordId, answer);
    expect(await store().inspect(claim)).toEqual({ kind: 'in_progress' });
    await store().complete(second.recordId, answer);
    expect((await store().inspect(claim))?.kind).toBe('replay');
  });

  it('forgets a key after its TTL', async () => {
    const claim = request();
    expect((await shortLived().claim(claim)).kind).toBe('new');
    await sleep(80);
    expect(await shortLived().inspect(claim)).toBeNull();
    expect((await shortLived().claim(claim)).kind).toBe('new');
  });
}

describe('MemoryIdempotencyStore', () => {
  const memory = new MemoryIdempotencyStore();
  const shortLived = new MemoryIdempotencyStore(50);
  behavesLikeTheDatabaseStore(() => memory, () => shortLived);

  it('bounds its memory by the size of the answers it holds', async () => {
    const small = new MemoryIdempotencyStore(60_000, 1_000);
    const first = request();
    await small.complete(((await small.claim(first)) as { recordId: string }).recordId, { ...answer, bytes: 600 });
    const second = request();
    await small.complete(((await small.claim(second)) as { recordId: string }).recordId, { ...answer, bytes: 600 });
    expect(await small.inspect(first)).toBeNull();
    expect((await small.inspect(second))?.kind).toBe('replay');
  });
});

describeRedis('RedisIdempotencyStore', () => {
  let redis: Redis;
  let store: RedisIdempotencyStore;
  let shortLived: RedisIdempotencyStore;
  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
    store = new RedisIdempotencyStore(redis);
    shortLived = new RedisIdempotencyStore(redis, 50);
  });
  afterAll(() => redis?.quit());
  behavesLikeTheDatabaseStore(() => store, () => shortLived);
});
