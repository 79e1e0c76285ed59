// The response cache with REDIS_URL: answers are kept in Redis (with the model's TTL), so
// every instance on that Redis answers from them; while Redis cannot answer, a lookup is a
// miss, nothing is kept, the request is served, and the switch is counted.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { RedisAnswerStore } from '../../server/gateway/cache/answer-store.js';
import { ResponseCache } from '../../server/gateway/cache/response-cache.js';
import { buildCatalog, type Catalog } from '../../server/gateway/catalog.js';
import { requestFeatures } from '../../server/gateway/routing.js';
import { Metrics } from '../../server/observability/metrics.js';
import { createOrg, localDecisions, type TestOrg } from '../billing/support.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { CuttableRelay, describeRedis, TEST_REDIS_URL } from '../support/redis.js';

describeRedis('response cache in Redis', () => {
  let upstream: FakeUpstream;
  let catalog: Catalog;
  let platform: TestPlatform;
  let org: TestOrg;
  let redis: Redis;
  const relay = new CuttableRelay();

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ answer: 'Kept in Redis.' });
    catalog = buildCatalog(
      {
        providers: [{ id: 'up', type: 'openai', base_url: `${upstream.url}/v1` }],
        deployments: [{ id: 'd', provider: 'up', model: 'fake-model' }],
        models: [{ id: 'cached', family: 'openai', context_window: 100_000, max_output_tokens: 1_000, deployments: ['d'], cache: { ttl_ms: 30_000 } }],
        routing: { tiers: { tier_1: ['cached'], tier_2: ['cached'], tier_3: ['cached'] } },
        circuit: { probe_interval_ms: 0 },
      },
      'response cache redis test',
      {},
    );
    await relay.open();
    platform = await startTestPlatform({ logLevel: 'info', redisUrl: relay.url }, { catalog });
    org = await createOrg(platform, 'cache-redis');
    redis = new Redis(TEST_REDIS_URL);
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    await relay.cut().catch(() => undefined);
    await upstream?.close();
    redis?.disconnect();
  });

  const chat = async (text: string) => {
    const res = await platform.api('/ai/v2/guarded/chat/completions', {
      method: 'POST',
      key: org.key,
      body: JSON.stringify({ model: 'cached', temperature: 0, messages: [{ role: 'user', content: text }] }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    return res.headers.get('x-cache');
  };

  /** The Redis keys of the cache holding `text`. */
  const keysHolding = async (text: string) => {
    const found: string[] = [];
    for (const key of await redis.keys('response-cache:*')) if ((await redis.get(key))?.includes(text)) found.push(key);
    return found;
  };

  it('keeps the answer in Redis for the model TTL, and answers from it', async () => {
    const text = `Where is it kept? ${randomUUID()}`;
    // The kept answer names the question, so that its key can be found.
    upstream.config.answer = `Kept for: ${text}`;
    expect(await chat(text)).toBe('miss');
    const [key] = await vi.waitFor(async () => {
      const keys = await keysHolding(text);
      expect(keys).toHaveLength(1);
      return keys;
    });
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
    const calls = upstream.requests.length;
    expect(await chat(text)).toBe('hit');
    expect(upstream.requests.length).toBe(calls);
    // Gone from Redis, gone from the cache: no copy in the instance's memory.
    await redis.del(key);
    expect(await chat(text)).toBe('miss');
  });

  it('shares answers between instances on the same Redis', async () => {
    const log = pino({ level: 'silent' });
    const [a, b] = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
    try {
      const instance = (connection: Redis) => {
        const metrics = new Metrics();
        return new ResponseCache(new RedisAnswerStore(connection, log, metrics), metrics, 1_000_000);
      };
      const request = { messages: [{ role: 'user' as const, content: `Shared? ${randomUUID()}` }], temperature: 0 };
      const plan = { mechanism: 'direct_model_selection' as const, tier: null, confidence: null, models: [catalog.models.get('cached')!], fallbacks: [], features: requestFeatures(request), access: null, catalog };
      const scope = { organizationId: randomUUID(), credentialId: randomUUID(), mode: undefined };
      const shape = { guarded: true, stream: false, includeUsage: false };
      const first = instance(a).slot(scope, plan, request, shape)!;
      expect(await first.lookup('chatcmpl-1', 1)).toBeUndefined();
      const body = { id: 'chatcmpl-1', object: 'chat.completion' as const, created: 1, model: 'cached', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
      first.keepJson(body);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const replayed = await instance(b).slot(scope, plan, request, shape)!.lookup('chatcmpl-2', 2);
      expect(replayed).toEqual({ kind: 'json', body: { ...body, id: 'chatcmpl-2', created: 2 } });
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });

  it('while Redis cannot answer: every lookup a miss, nothing kept, every request served, the decisions counted', async () => {
    const before = await localDecisions(platform, 'response_cache_local_decisions_total');
    await relay.cut();
    const text = `During the outage ${randomUUID()}`;
    upstream.config.answer = `Kept for: ${text}`;
    expect(await chat(text)).toBe('miss');
    expect(await chat(text)).toBe('miss');
    // Two lookups and the two answers not kept.
    expect(await localDecisions(platform, 'response_cache_local_decisions_total')).toBe(before + 4);
    expect(await keysHolding(text)).toEqual([]);
    expect(platform.logs.some((line) => line.includes('response cache lookups are misses until it is back'))).toBe(true);
  });
});
