// Billing holds in Redis (REDIS_URL): a prepaid request's hold is one script on Redis, with
// no write to the database until it settles; the database stays the truth (credit added
// by a process that never told Redis is seen at once); while Redis cannot answer, holds are
// taken in the database (logged once each way, counted in billing_database_holds_total); an
// instance that crashes between reserve and settle leaves its hold in Redis only, and another
// instance drops it once the first's heartbeat is stale. The overshoot bound across two
// instances is in rate-limits.redis.test.ts.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { CreditService } from '../../server/billing/credit.js';
import { DEAD_AFTER_MS, HEARTBEAT_MS } from '../../server/billing/instances.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';
import { ask, behindRelay, createOrg, localDecisions, pricedCatalog, settled, type TestOrg } from './support.js';

const ANSWER = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') + '.';

describeRedis('billing holds in Redis', () => {
  let upstream: FakeUpstream;
  let platform: TestPlatform;
  let redis: Redis;
  beforeAll(async () => {
    upstream = await startFakeOpenAI({ answer: ANSWER });
    const catalog = pricedCatalog({
      providers: [{ id: 'fake', type: 'openai', base_url: `${upstream.url}/v1` }],
      deployments: [{ id: 'd-fake', provider: 'fake', model: 'fake-model' }],
      models: [{ id: 'remote', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, pricing: { input_per_1m: 1000, output_per_1m: 2000 }, deployments: ['d-fake'] }],
    });
    platform = await startTestPlatform({ logLevel: 'silent', redisUrl: TEST_REDIS_URL }, { catalog });
    redis = new Redis(TEST_REDIS_URL);
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    await upstream?.close();
    await redis?.quit();
  });

  const prisma = () => platform.services.database.prisma;
  const billing = () => platform.services.billing;
  async function prepaid(label: string, micros: bigint): Promise<TestOrg> {
    const org = await createOrg(platform, label);
    await billing().accounts.setMode(org.id, 'prepaid');
    await billing().accounts.addCredit(org.id, micros, 'test');
    return org;
  }
  const chat = (org: TestOrg, body: unknown = ask()) => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(body) });

  it('holds a request in Redis without writing the database, and settles it there afterwards', async () => {
    const org = await prepaid('hot', 10_000_000n);
    expect((await chat(org)).status).toBe(200); // the pool's copy is now in Redis
    await settled(platform, org.id);
    const before = await prisma().billingAccount.findUniqueOrThrow({ where: { organizationId: org.id } });

    upstream.config.chunkIntervalMs = 25;
    const res = await chat(org, { model: 'remote', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Count.' }] });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    // In flight: the hold is in Redis only; the account row has not been written since.
    const during = await prisma().billingAccount.findUniqueOrThrow({ where: { organizationId: org.id } });
    expect(during.version).toBe(before.version);
    expect(during.reservedMicros).toBe(0n);
    expect(await prisma().billingReservation.count({ where: { organizationId: org.id, settledAt: null } })).toBe(0);
    expect(Object.keys(await redis.hgetall(`billing:{${org.id}}:credit:holds`))).toHaveLength(1);
    const held = (await billing().accounts.account(org.id)).reservedMicros;
    expect(held).toBeGreaterThan(0n);

    while (!(await reader.read()).done);
    upstream.config.chunkIntervalMs = 0;
    await settled(platform, org.id);
    expect(await redis.hlen(`billing:{${org.id}}:credit:holds`)).toBe(0);
    const holds = await prisma().billingReservation.findMany({ where: { organizationId: org.id }, orderBy: { createdAt: 'asc' } });
    expect(holds.map((h) => h.outcome)).toEqual(['settled', 'settled']);
    expect(holds[1].estimateMicros).toBe(held);
    const usage = await prisma().usageRecord.aggregate({ where: { organizationId: org.id }, _sum: { billedMicros: true } });
    const account = await billing().accounts.account(org.id);
    expect(account.reservedMicros).toBe(0n);
    expect(account.balanceMicros).toBe(10_000_000n - usage._sum.billedMicros!);
    expect(await billing().accounts.credit.balance(org.id)).toBe(account.balanceMicros);
  });

  it('serves a request as soon as credit lands, even credit added by a process that never told Redis', async () => {
    const org = await prepaid('landed', 1n);
    expect((await chat(org)).status).toBe(402);
    // The operator CLI without REDIS_URL: the database only.
    await new CreditService(prisma()).add(org.id, 5_000_000n, 'cli top-up');
    expect((await chat(org)).status).toBe(200);
  });

  it('keeps the weekly cap and refuses with the same errors as the database path', async () => {
    const org = await prepaid('hotcap', 10_000_000n);
    await billing().accounts.setWeeklyCap(org.id, 1n);
    const refused = await chat(org);
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.name).toBe('SPENDING_LIMIT_EXCEEDED');
    await billing().accounts.setWeeklyCap(org.id, null);
    expect((await chat(org)).status).toBe(200);
  });

  it('holds an unmetered organization against its weekly cap alone', async () => {
    const org = await createOrg(platform, 'hotfree');
    await billing().accounts.setWeeklyCap(org.id, 200_000n);
    expect((await chat(org)).status).toBe(200); // no credit at all: the balance does not gate it
    await settled(platform, org.id);
    expect((await chat(org)).status).toBe(429);
    expect(await prisma().creditLedger.count({ where: { organizationId: org.id } })).toBe(0);
  });

  it('draws coding-agent plans in Redis too, and rolls their period when settling', async () => {
    const org = await prepaid('hotplan', 10_000_000n);
    const coding = () => platform.api('/ai/v2/code-assist/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) });
    expect((await coding()).status).toBe(402);
    await billing().accounts.setCodingPlan(org.id, 'code-assist', { allowanceMicros: 250_000n, topupAvailable: true });
    expect((await coding()).status).toBe(200);
    await settled(platform, org.id);
    const spent = await coding();
    expect(spent.status).toBe(402);
    expect((await spent.json()).error.name).toBe('GC_ALLOWANCE_EXHAUSTED');
    expect(await billing().accounts.credit.balance(org.id)).toBe(10_000_000n);
  });
});

describePostgres('an instance crashed between reserve and settle (PostgreSQL + Redis)', () => {
  const database = useTestDatabase('hot_holds');
  describeRedis('two instances', () => {
    let crashed: TestPlatform;
    let survivor: TestPlatform;
    let redis: Redis;
    beforeAll(async () => {
      const config = { logLevel: 'silent' as const, databaseUrl: database.url, redisUrl: TEST_REDIS_URL };
      crashed = await startTestPlatform({ ...config, instanceId: 'node-a' }, { catalog: pricedCatalog() });
      survivor = await startTestPlatform({ ...config, instanceId: 'node-b' }, { catalog: pricedCatalog() }, { adminKey: crashed.adminKey });
      redis = new Redis(TEST_REDIS_URL);
    }, 60_000);
    afterAll(async () => {
      await Promise.all([crashed?.close(), survivor?.close()]);
      await redis?.quit();
    });

    it('leaves its hold in Redis only; the other instance drops it once the heartbeat is stale, serves again, and charges nothing for it', async () => {
      const org = await createOrg(survivor, 'crashed');
      const { billing, database: db } = survivor.services;
      await billing.accounts.setMode(org.id, 'prepaid');
      await billing.accounts.addCredit(org.id, 1_000_000n, 'test');
      const chat = () => survivor.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) });

      // A request admitted on the first instance (its hold in Redis), which crashes before it settles.
      const hold = await crashed.services.billing.reservations.reserve({ organizationId: org.id, apiKeyId: org.keyId, operation: 'createGuardedChatCompletion', model: 'priced', product: null, estimateMicros: 900_000n, traceId: 'trc_crashed', debit: true, limitedKey: false });
      expect(hold.kept).toBe('redis');
      const holds = `billing:{${org.id}}:credit:holds`;
      expect(await redis.hkeys(holds)).toEqual([hold.id]);
      // Held across instances: ~150,000 µ$ do not fit in what is left.
      expect((await billing.accounts.account(org.id)).reservedMicros).toBe(900_000n);
      const refused = await chat();
      expect(refused.status).toBe(402);
      expect((await refused.json()).error.name).toBe('INSUFFICIENT_CREDIT');
      // The crash: it stops beating and never tells the database it left (a clean stop would mark it dead at once).
      Object.assign(crashed.services.database.prisma, { $executeRaw: () => Promise.reject(new Error('crashed')) });
      await crashed.close();
      const alive = await db.prisma.$queryRaw<{ alive: boolean }[]>`
        SELECT heartbeat_at > now() - ${`${DEAD_AFTER_MS} milliseconds`}::interval AS alive FROM billing_instances WHERE instance_id = 'node-a'`;
      expect(alive).toEqual([{ alive: true }]);
      // Nothing settled it: no record, no charge, the hold still in Redis.
      expect(await db.prisma.billingReservation.count({ where: { id: hold.id } })).toBe(0);
      expect(await redis.hkeys(holds)).toEqual([hold.id]);
      // DEAD_AFTER_MS without a heartbeat (here: its last one made that old).
      await db.prisma.$executeRaw`
        UPDATE billing_instances SET heartbeat_at = now() - ${`${DEAD_AFTER_MS + 1_000} milliseconds`}::interval WHERE instance_id = 'node-a'`;

      // The survivor's next heartbeat reads the crashed incarnation dead...
      await vi.waitFor(async () => expect((await billing.accounts.account(org.id)).reservedMicros).toBe(0n), { timeout: HEARTBEAT_MS + 5_000, interval: 200 });
      // ...and its next hold on the pool drops the dead one's: served, and only this request held.
      const served = await chat();
      expect(served.status).toBe(200);
      await settled(survivor, org.id);
      expect(await redis.hlen(holds)).toBe(0);
      const usage = await db.prisma.usageRecord.aggregate({ where: { organizationId: org.id }, _sum: { billedMicros: true } });
      expect(usage._sum.billedMicros).toBeGreaterThan(0n);
      expect(await billing.accounts.credit.balance(org.id)).toBe(1_000_000n - usage._sum.billedMicros!);
      expect((await billing.accounts.account(org.id)).balanceMicros).toBe(1_000_000n - usage._sum.billedMicros!);
    }, 60_000);
  });
});

describeRedis('billing holds while Redis is down', () => {
  const { relay, platform: running, org: caller } = behindRelay('billdown');
  let platform: TestPlatform;
  let org: TestOrg;
  beforeAll(async () => {
    platform = running();
    org = caller();
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    await platform.services.billing.accounts.addCredit(org.id, 10_000_000n, 'test');
  });
  const chat = () => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) });
  const metric = () => localDecisions(platform, 'billing_database_holds_total');
  const logged = (text: string) => platform.logs.filter((l) => l.includes(text)).length;

  it('takes holds in the database instead: requests are still gated and served, logged once and counted', async () => {
    expect((await chat()).status).toBe(200);
    expect(await metric()).toBe(0);
    await relay.cut();
    expect((await chat()).status).toBe(200);
    expect((await chat()).status).toBe(200);
    await settled(platform, org.id);
    expect(await metric()).toBeGreaterThanOrEqual(2);
    expect(logged('Redis cannot answer: billing holds are taken in the database')).toBe(1);
    const holds = await platform.services.database.prisma.billingReservation.count({ where: { organizationId: org.id, outcome: 'settled' } });
    expect(holds).toBe(3);
    const usage = await platform.services.database.prisma.usageRecord.aggregate({ where: { organizationId: org.id }, _sum: { billedMicros: true } });
    expect(await platform.services.billing.accounts.credit.balance(org.id)).toBe(10_000_000n - usage._sum.billedMicros!);
  }, 30_000);

  it('takes them in Redis again once it is back', async () => {
    await relay.open();
    await vi.waitFor(
      async () => {
        expect((await chat()).status).toBe(200);
        expect(logged('Redis answers again: billing holds are taken in Redis')).toBe(1);
      },
      { timeout: 20_000, interval: 200 },
    );
  }, 30_000);
});

describe('(the database alone)', () => {
  it('is where holds are kept without REDIS_URL', async () => {
    const platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
    try {
      const org = await createOrg(platform, 'nored');
      await platform.services.billing.accounts.setMode(org.id, 'prepaid');
      await platform.services.billing.accounts.addCredit(org.id, 10_000_000n, 'test');
      expect((await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status).toBe(200);
      await settled(platform, org.id);
      const [hold] = await platform.services.database.prisma.billingReservation.findMany({ where: { organizationId: org.id } });
      expect(hold.outcome).toBe('settled');
      expect(await (await platform.mgmt('/api/v1/metrics')).text()).not.toContain('billing_database_holds_total');
    } finally {
      await platform.close();
    }
  }, 120_000); // starts a platform of its own
});
