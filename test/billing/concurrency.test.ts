// Reserve-then-settle under load: 100 concurrent requests against a nearly empty balance
// (or a nearly reached weekly cap) overshoot by at most one request's estimate. On PGlite in
// one process, and on PostgreSQL with two instances sharing the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, burst, checkCredit, createOrg, creditRun, N, pricedCatalog, settled, twoInstances } from './support.js';

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
    await billing.accounts.setMode(org.id, 'prepaid');
    await billing.accounts.credit.add(org.id, 100_000_000n, 'plenty');
    const cap = 700_000n;
    await billing.accounts.setWeeklyCap(org.id, cap);
    const counts = await burst([platform], org, ask());
    await settled(platform, org.id);
    const account = await billing.accounts.account(org.id);
    const estimate = (await database.prisma.billingReservation.findFirstOrThrow({ where: { organizationId: org.id } })).estimateMicros;
    console.log(`[billing concurrency PGlite cap] ${N} requests, cap ${cap} µ$: ${JSON.stringify(counts)}, spent this week ${account.weekSpentMicros} µ$`);
    expect(counts.ok).toBeGreaterThan(0);
    expect(counts.ok + (counts['429 SPENDING_LIMIT_EXCEEDED'] ?? 0)).toBe(N);
    expect(account.weekSpentMicros).toBeLessThanOrEqual(cap + estimate);
  }, 60_000);
});

describePostgres('100 concurrent requests, two instances (PostgreSQL)', () => {
  const database = useTestDatabase('billing_burst');
  const instances = twoInstances(() => ({ databaseUrl: database.url }));

  it('against a nearly empty balance overshoot by at most one estimate', async () => {
    const start = 700_000n;
    checkCredit(await creditRun(instances(), start), start, 'PostgreSQL ×2');
  }, 60_000);
});
