// Per-key limits across two instances sharing PostgreSQL, with and without Redis (the holds
// in Redis, the key's pool copy beside its organization's credit; or one SQL statement per
// hold): 100 concurrent requests of a capped key, and of a key with a credit share, never
// spend beyond the limit. Needs PostgreSQL
// (TEST_POSTGRES_URL) and Redis (TEST_REDIS_URL): CI runs both; elsewhere the suite is
// skipped with the reason it could not reach them. The embedded PGlite bursts are in
// key-limits.test.ts.
import { describe, expect, it } from 'vitest';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';
import { ask, createOrg, twoInstances } from './support.js';
import { keyBurst } from './key-limits.suite.js';

describePostgres('per-key limits, two instances', () => {
  describe('on PostgreSQL alone (each hold one statement locking the key pool, then the account)', () => {
    const database = useTestDatabase('key_limits_sql');
    const instances = twoInstances(() => ({ databaseUrl: database.url }));

    it('a weekly cap and a credit share hold exactly', async () => {
      const capped = await keyBurst(instances(), await createOrg(instances()[0], 'skeycap'), { weeklyCapMicros: 700_000 }, { prepaidMicros: 100_000_000n });
      expect(Object.keys(capped.refused)).toEqual(['429 SPENDING_LIMIT_EXCEEDED']);
      expect(capped.keySpent).toBeLessThanOrEqual(700_000n);
      const shared = await keyBurst(instances(), await createOrg(instances()[0], 'skeyshare'), { creditSharePercent: 25 }, { prepaidMicros: 2_800_000n });
      expect(Object.keys(shared.refused)).toEqual(['402 INSUFFICIENT_CREDIT']);
      expect(shared.keySpent).toBeLessThanOrEqual(700_000n);
    }, 60_000);
  });

  describeRedis('on PostgreSQL and Redis', () => {
    const database = useTestDatabase('key_limits');
    const instances = twoInstances(() => ({ databaseUrl: database.url, redisUrl: TEST_REDIS_URL }));

    it('a weekly cap: the key spends at most its cap (429 SPENDING_LIMIT_EXCEEDED beyond), its holds taken in Redis', async () => {
      const org = await createOrg(instances()[0], 'rkeycap');
      const cap = 700_000n;
      const outcome = await keyBurst(instances(), org, { weeklyCapMicros: Number(cap) }, { prepaidMicros: 100_000_000n });
      expect(Object.keys(outcome.refused)).toEqual(['429 SPENDING_LIMIT_EXCEEDED']);
      expect(outcome.keySpent).toBeLessThanOrEqual(cap);
      expect(outcome.keySpent).toBeGreaterThan(cap - outcome.estimate);
      const holds = await instances()[0].services.database.prisma.billingReservation.findMany({ where: { organizationId: org.id } });
      expect(holds.every((h) => !h.keyHeld)).toBe(true); // kept in Redis, recorded when settled
      expect((await instances()[1].api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status).toBe(200);
    }, 60_000);

    it("a credit share: the key spends at most 25% of the organization's credit (402 INSUFFICIENT_CREDIT beyond)", async () => {
      const org = await createOrg(instances()[0], 'rkeyshare');
      const credit = 2_800_000n;
      const outcome = await keyBurst(instances(), org, { creditSharePercent: 25 }, { prepaidMicros: credit });
      expect(Object.keys(outcome.refused)).toEqual(['402 INSUFFICIENT_CREDIT']);
      expect(outcome.keySpent).toBeLessThanOrEqual(credit / 4n);
      expect(outcome.keySpent).toBeGreaterThan(credit / 4n - outcome.estimate);
    }, 60_000);
  });
});
