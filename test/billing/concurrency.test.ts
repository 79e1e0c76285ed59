// Reserve-then-settle under load: 100 concurrent requests against a nearly empty balance
// (or a nearly reached weekly cap) overshoot by at most one request's estimate. On PGlite in
// one process, and on PostgreSQL with two instances sharing the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog, settled, type TestOrg } from './support.js';

const N = 100;

interface Outcome {
  ok: number;
  refused: Record<string, number>;
  estimate: bigint;
  finalBalance: bigint;
  billed: bigint;
}

async function burst(instances: TestPlatform[], org: TestOrg, body: unknown): Promise<Record<string, number> & { ok: number }> {
  const results = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const res = await instances[i % instances.length].api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(body) });
      const json = await res.json();
      return res.status === 200 ? 'ok' : `${res.status} ${json.error?.name}`;
    }),
  );
  const counts: Record<string, number> = { ok: 0 };
  for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
  return counts as Record<string, number> & { ok: number };
}

async function creditRun(instances: TestPlatform[], startMicros: bigint): Promise<Outcome> {
  const [platform] = instances;
  const org = await createOrg(platform, 'burst');
  await platform.services.billing.setMode(org.id, 'prepaid');
  await platform.services.billing.credit.add(org.id, startMicros, 'burst');
  const counts = await burst(instances, org, ask());
  await settled(platform, org.id);
  const { prisma } = platform.services.database;
  const holds = await prisma.billingReservation.findMany({ where: { organizationId: org.id } });
  const usage = await prisma.usageRecord.aggregate({ where: { organizationId: org.id }, _sum: { billedMicros: true } });
  const { ok, ...refused } = counts;
  return {
    ok,
    refused,
    estimate: holds.reduce((max, h) => (h.estimateMicros > max ? h.estimateMicros : max), 0n),
    finalBalance: await platform.services.billing.credit.balance(org.id),
    billed: usage._sum.billedMicros ?? 0n,
  };
}

function checkCredit(outcome: Outcome, startMicros: bigint, label: string): void {
  console.log(
    `[billing concurrency ${label}] ${N} requests, start balance ${startMicros} µ$, estimate ${outcome.estimate} µ$: ` +
      `${outcome.ok} served, refused ${JSON.stringify(outcome.refused)}, billed ${outcome.billed} µ$, final balance ${outcome.finalBalance} µ$ ` +
      `(overshoot ${outcome.finalBalance < 0n ? -outcome.finalBalance : 0n} µ$)`,
  );
  expect(outcome.ok).toBeGreaterThan(0);
  expect(outcome.ok + Object.values(outcome.refused).reduce((a, b) => a + b, 0)).toBe(N);
  expect(Object.keys(outcome.refused)).toEqual(['402 INSUFFICIENT_CREDIT']);
  // Overshoot at most one request's estimate (the holds make it none when answers stay within max_tokens).
  expect(outcome.finalBalance).toBeGreaterThanOrEqual(-outcome.estimate);
  expect(outcome.finalBalance).toBe(startMicros - outcome.billed);
}

describe('100 concurrent requests, one instance (PGlite)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
  });
  afterAll(() => platform?.close());

  it('against a nearly empty balance overshoot by at most one estimate', async () => {
    const start = 700_000n; // about four estimates
    checkCredit(await creditRun([platform], start), start, 'PGlite');
  }, 60_000);

  it('against a nearly reached weekly cap overshoot it by at most one estimate', async () => {
    const org = await createOrg(platform, 'capburst');
    const { billing, database } = platform.services;
    await billing.setMode(org.id, 'prepaid');
    await billing.credit.add(org.id, 100_000_000n, 'plenty');
    const cap = 700_000n;
    await billing.setWeeklyCap(org.id, cap);
    const counts = await burst([platform], org, ask());
    await settled(platform, org.id);
    const account = await billing.account(org.id);
    const estimate = (await database.prisma.billingReservation.findFirstOrThrow({ where: { organizationId: org.id } })).estimateMicros;
    console.log(`[billing concurrency PGlite cap] ${N} requests, cap ${cap} µ$: ${JSON.stringify(counts)}, spent this week ${account.weekSpentMicros} µ$`);
    expect(counts.ok).toBeGreaterThan(0);
    expect(counts.ok + (counts['429 SPENDING_LIMIT_EXCEEDED'] ?? 0)).toBe(N);
    expect(account.weekSpentMicros).toBeLessThanOrEqual(cap + estimate);
  }, 60_000);
});

describePostgres('100 concurrent requests, two instances (PostgreSQL)', () => {
  const database = useTestDatabase('billing_burst');
  let instances: TestPlatform[] = [];
  beforeAll(async () => {
    const first = await startTestPlatform({ logLevel: 'silent', databaseUrl: database.url }, { catalog: pricedCatalog() });
    const second = await startTestPlatform({ logLevel: 'silent', databaseUrl: database.url }, { catalog: pricedCatalog() }, { adminKey: first.adminKey });
    instances = [first, second];
  }, 60_000);
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.close()));
  });

  it('against a nearly empty balance overshoot by at most one estimate', async () => {
    const start = 700_000n;
    checkCredit(await creditRun(instances, start), start, 'PostgreSQL ×2');
  }, 60_000);
});
