// Shared by the key-limit suites (key-limits.test.ts on PGlite, key-limits.redis.test.ts on
// PostgreSQL and Redis): a key with limits, and a burst of its requests.
import type { KeyLimits } from '../../server/identity/api-keys.js';
import type { TestPlatform } from '../support/platform.js';
import { ask, burst, N, settled, type TestOrg } from './support.js';

/** A new inference key of the organization with these limits, its pool set up as the management API does. */
export async function limitedKey(platform: TestPlatform, organizationId: string, limits: Partial<KeyLimits>): Promise<{ key: string; id: string }> {
  const { key, plaintext } = await platform.services.identity.keys.issue(organizationId, { scopes: ['inference'], limits });
  if (limits.weeklyCapMicros != null || limits.creditSharePercent != null) await platform.services.billing.accounts.syncKeyPool(organizationId, key.id);
  return { key: plaintext, id: key.id };
}

export interface KeyBurst {
  ok: number;
  refused: Record<string, number>;
  /** The largest hold one request took. */
  estimate: bigint;
  /** What the key's requests were billed (the usage records), and its pool's week spend agrees. */
  keySpent: bigint;
}

/** N concurrent requests of a new key with `limits` (spread over the instances), settled; the organization prepaid when `prepaidMicros` is given. */
export async function keyBurst(instances: TestPlatform[], org: TestOrg, limits: Partial<KeyLimits>, options: { prepaidMicros?: bigint }): Promise<KeyBurst> {
  const [platform] = instances;
  const { billing, database } = platform.services;
  if (options.prepaidMicros !== undefined) {
    await billing.accounts.setMode(org.id, 'prepaid');
    await billing.accounts.credit.add(org.id, options.prepaidMicros, 'burst');
  }
  const key = await limitedKey(platform, org.id, limits);
  const counts = await burst(instances, { ...org, key: key.key, keyId: key.id }, ask());
  await settled(platform, org.id);
  const holds = await database.prisma.billingReservation.findMany({ where: { apiKeyId: key.id } });
  const usage = await database.prisma.usageRecord.aggregate({ where: { apiKeyId: key.id }, _sum: { billedMicros: true } });
  const pool = (await billing.accounts.keyAccount(key.id))!;
  const keySpent = usage._sum.billedMicros ?? 0n;
  const { ok, ...refused } = counts;
  console.log(`[key limits ${JSON.stringify(limits)} ×${instances.length}] ${N} requests: ${ok} served, refused ${JSON.stringify(refused)}, key billed ${keySpent} µ$`);
  if (pool.weekSpentMicros !== keySpent || pool.reservedMicros !== 0n) throw new Error(`the key's pool (${pool.weekSpentMicros} spent, ${pool.reservedMicros} held) disagrees with its usage (${keySpent})`);
  if (ok === 0 || ok + Object.values(refused).reduce((a, b) => a + b, 0) !== N) throw new Error(`unexpected burst ${JSON.stringify(counts)}`);
  return { ok, refused, estimate: holds.reduce((max, h) => (h.estimateMicros > max ? h.estimateMicros : max), 0n), keySpent };
}
