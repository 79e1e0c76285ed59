// Rate limits through Redis: the atomic script on its own, two server instances on
// PostgreSQL + Redis holding one global limit (and the credit overshoot bound) under 100
// parallel requests, and what happens while Redis is down (each instance counts for itself,
// logged once and counted in the metrics) and when it comes back.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { routesById } from '../../generated/contract/routes.js';
import { estimateRequest } from '../../server/billing/estimate.js';
import { RedisWindows } from '../../server/limits/redis-window.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, behindRelay, burst, checkCredit, createOrg, creditRun, localDecisions as countedLocally, N, pricedCatalog, settled, type TestOrg } from './support.js';

describeRedis('the window script in Redis', () => {
  let client: Redis;
  beforeAll(async () => {
    client = new Redis(TEST_REDIS_URL);
  });
  afterAll(() => client?.quit());

  it('admits exactly the limit, then refuses with Retry-After within the window', async () => {
    const windows = new RedisWindows(client);
    const counter = [{ key: `test:rl:{${randomUUID()}}:a`, limit: 3, cost: 1 }];
    const decisions = await Promise.all(Array.from({ length: 20 }, () => windows.take(counter)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
    const refused = decisions.find((d) => !d.allowed)!;
    expect(refused).toMatchObject({ allowed: false, index: 0, limit: 3 });
    if (refused.allowed) throw new Error('unreachable');
    expect(refused.retryAfterS).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterS).toBeLessThanOrEqual(60);
    expect(await client.ttl(counter[0].key)).toBeGreaterThan(0);
  });

  it('takes several counters all or nothing', async () => {
    const windows = new RedisWindows(client);
    const tag = randomUUID();
    const requests = { key: `test:rl:{${tag}}:r`, limit: 10, cost: 1 };
    const tokens = { key: `test:rl:{${tag}}:t`, limit: 100, cost: 60 };
    expect((await windows.take([requests, tokens])).allowed).toBe(true);
    expect(await windows.take([requests, tokens])).toMatchObject({ allowed: false, index: 1, limit: 100 });
    expect(await client.hvals(requests.key)).toEqual(['1']);
  });
});

describePostgres('two instances on PostgreSQL + Redis', () => {
  const database = useTestDatabase('rate_limits');
  describeRedis('with Redis', () => {
    let instances: TestPlatform[] = [];
    beforeAll(async () => {
      const config = { logLevel: 'silent' as const, databaseUrl: database.url, redisUrl: TEST_REDIS_URL };
      const first = await startTestPlatform(config, { catalog: pricedCatalog() });
      const second = await startTestPlatform(config, { catalog: pricedCatalog() }, { adminKey: first.adminKey });
      instances = [first, second];
    }, 60_000);
    afterAll(async () => {
      await Promise.all(instances.map((i) => i.close()));
    });

    it(`hold one limit of 10 requests per minute: ${N} parallel requests across both admit exactly 10`, async () => {
      const org = await createOrg(instances[0], 'global');
      // Each instance reads the quota from the database (the second has not cached it yet).
      await instances[0].services.limits.quotas.set(org.id, null, { requestsPerMinute: 10, tokensPerMinute: null });
      const counts = await burst(instances, org, ask());
      console.log(`[rate limit PostgreSQL + Redis ×2] ${N} requests, limit 10/min: ${JSON.stringify(counts)}`);
      // Had Redis not answered in time, each instance would have counted alone (documented fallback).
      expect(await Promise.all(instances.map(localDecisions))).toEqual([0, 0]);
      expect(counts).toEqual({ ok: 10, '429 QUOTA_EXCEEDED': N - 10 });
    }, 60_000);

    it('hold one tokens-per-minute limit too', async () => {
      const org = await createOrg(instances[0], 'globaltokens');
      const body = ask(undefined, { max_tokens: 30 });
      await instances[0].services.limits.quotas.set(org.id, null, { requestsPerMinute: null, tokensPerMinute: 1_000 });
      const counts = await burst(instances, org, body);
      // Every request has the same estimate: the limit admits floor(1000 / estimate) of them.
      const refused = await instances[1].api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(body) });
      expect(refused.status).toBe(429);
      const perRequest = estimateTokens(instances[0], body);
      expect(await Promise.all(instances.map(localDecisions))).toEqual([0, 0]);
      expect(counts.ok).toBe(Math.floor(1_000 / perRequest));
      expect(counts['429 QUOTA_EXCEEDED']).toBe(N - counts.ok);
    }, 60_000);

    it('keep the credit overshoot bound of reserve-then-settle, with the holds in Redis', async () => {
      const start = 700_000n;
      checkCredit(await creditRun(instances, start), start, 'PostgreSQL + Redis ×2');
      // Every hold was taken by the script in Redis, none fell back to the database.
      expect(await Promise.all(instances.map((i) => countedLocally(i, 'billing_database_holds_total')))).toEqual([0, 0]);
    }, 60_000);

    it('keep the weekly cap bound too', async () => {
      const org = await createOrg(instances[0], 'capburst');
      const { billing, database } = instances[0].services;
      await billing.accounts.setMode(org.id, 'prepaid');
      await billing.accounts.addCredit(org.id, 100_000_000n, 'plenty');
      const cap = 700_000n;
      await billing.accounts.setWeeklyCap(org.id, cap);
      const counts = await burst(instances, org, ask());
      await settled(instances[0], org.id);
      const account = await billing.accounts.account(org.id);
      const estimate = (await database.prisma.billingReservation.findFirstOrThrow({ where: { organizationId: org.id } })).estimateMicros;
      console.log(`[billing concurrency PostgreSQL + Redis ×2 cap] ${N} requests, cap ${cap} µ$: ${JSON.stringify(counts)}, spent this week ${account.weekSpentMicros} µ$`);
      expect(counts.ok).toBeGreaterThan(0);
      expect(counts.ok + (counts['429 SPENDING_LIMIT_EXCEEDED'] ?? 0)).toBe(N);
      expect(account.weekSpentMicros).toBeLessThanOrEqual(cap + estimate);
    }, 60_000);
  });
});

/** Decisions an instance made alone because Redis did not answer (metric rate_limit_local_decisions_total). */
const localDecisions = (platform: TestPlatform) => countedLocally(platform, 'rate_limit_local_decisions_total');

function estimateTokens(platform: TestPlatform, body: Record<string, unknown>): number {
  const e = estimateRequest(platform.services.inference.gateway.catalog, routesById.createGuardedChatCompletion, body);
  return e.promptTokens + e.outputTokens;
}

describeRedis('while Redis is down', () => {
  const { relay, platform: running, org: caller } = behindRelay('redisdown');
  let platform: TestPlatform;
  let org: TestOrg;
  beforeAll(async () => {
    platform = running();
    org = caller();
    await platform.services.limits.quotas.set(org.id, null, { requestsPerMinute: 3, tokensPerMinute: null });
  });

  const chat = () => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) });
  const metric = () => localDecisions(platform);

  it('counts in Redis while it answers', async () => {
    expect((await chat()).status).toBe(200);
    expect(platform.services.limits.limiter.fallingBack).toBe(false);
    expect(await metric()).toBe(0);
  });

  it('falls back to this instance’s own count: requests are still answered and the limit still holds per instance, logged once and counted', async () => {
    await relay.cut();
    // The next decisions cannot reach Redis: each is made locally, at once, not refused.
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await chat()).status);
    // The local count starts empty: 3 admitted, then 429 (the 1 counted in Redis is not seen).
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(platform.services.limits.limiter.fallingBack).toBe(true);
    expect(await metric()).toBe(5);
    expect(platform.logs.filter((l) => l.includes('Redis cannot answer: rate limits are counted per instance')).length).toBe(1);
  }, 30_000);

  it('counts in Redis again once it is back, and says so', async () => {
    await relay.open();
    // ioredis reconnects on its own (backoff): wait for a decision made by Redis again.
    await vi.waitFor(
      async () => {
        await chat();
        expect(platform.services.limits.limiter.fallingBack).toBe(false);
      },
      { timeout: 20_000, interval: 200 },
    );
    expect(platform.logs.some((l) => l.includes('Redis answers again'))).toBe(true);
    const before = await metric();
    await chat();
    expect(await metric()).toBe(before);
  }, 30_000);
});
