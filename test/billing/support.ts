// Shared set-up of the billing suites: a platform whose catalog has priced models, and an
// organization with its own key.
import { afterAll, beforeAll, expect, vi } from 'vitest';
import type { Config } from '../../server/config.js';
import { buildCatalog, type Catalog } from '../../server/gateway/catalog.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { CuttableRelay } from '../support/redis.js';

/**
 * `priced` answers through the local provider at $1,000 / $2,000 per 1M tokens, i.e. 1,000
 * micro-dollars per input token and 2,000 per output token: costs are easy to read.
 */
export const INPUT_MICROS = 1_000n;
export const OUTPUT_MICROS = 2_000n;

export function pricedCatalog(extra: { providers?: unknown[]; deployments?: unknown[]; models?: unknown[]; failover?: unknown; timeouts?: unknown } = {}): Catalog {
  return buildCatalog(
    {
      providers: [{ id: 'local', type: 'local' }, ...(extra.providers ?? [])],
      deployments: [
        { id: 'local-chat', provider: 'local', model: 'local-chat' },
        { id: 'local-embedding', provider: 'local', model: 'local-embedding' },
        ...(extra.deployments ?? []),
      ],
      models: [
        { id: 'priced', family: 'local', context_window: 32_768, max_output_tokens: 8_192, capabilities: { tools: true }, pricing: { input_per_1m: 1000, output_per_1m: 2000 }, deployments: ['local-chat'] },
        { id: 'cheap', family: 'local', context_window: 32_768, max_output_tokens: 4_096, pricing: { input_per_1m: 1, output_per_1m: 2 }, deployments: ['local-chat'] },
        { id: 'local-embedding', family: 'local', type: 'embedding', context_window: 2_048, dimensions: 512, shortenable: true, pricing: { input_per_1m: 100, output_per_1m: 0 }, deployments: ['local-embedding'] },
        ...(extra.models ?? []),
      ],
      routing: { tiers: { tier_1: ['cheap', 'priced'], tier_2: ['priced'], tier_3: ['priced'] } },
      circuit: { probe_interval_ms: 0 },
      ...(extra.failover ? { failover: extra.failover } : {}),
      ...(extra.timeouts ? { timeouts: extra.timeouts } : {}),
    },
    'billing test',
    {},
  );
}

export interface TestOrg {
  id: string;
  name: string;
  key: string;
  keyId: string;
}

let counter = 0;
export async function createOrg(platform: TestPlatform, label = 'org'): Promise<TestOrg> {
  const { identity } = platform.services;
  const org = await identity.organizations.createOrganization(`${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`);
  // The inference operations and the deprecated Chat API (a metered model call too).
  const { key, plaintext } = await identity.keys.issue(org.id, { scopes: ['inference', 'chat'], label: 'billing test', expiresAt: null });
  return { id: org.id, name: org.name, key: plaintext, keyId: key.id };
}

export const ask = (content = 'Say something about rivers.', extra: Record<string, unknown> = {}) => ({
  model: 'priced',
  max_tokens: 40,
  messages: [{ role: 'user', content }],
  ...extra,
});

/** Waits until every request's usage is settled (settlement runs after the response closes). */
export async function settled(platform: TestPlatform, organizationId: string): Promise<void> {
  const { prisma } = platform.services.database;
  await vi.waitFor(
    async () => {
      await platform.services.billing.reservations.drain();
      expect(await prisma.billingReservation.count({ where: { organizationId, settledAt: null } })).toBe(0);
    },
    { timeout: 10_000, interval: 20 },
  );
  await platform.services.billing.reservations.drain();
}

/** The ledger's sum and the account's counters agree, and nothing is held. */
export async function ledgerBalance(platform: TestPlatform, organizationId: string): Promise<bigint> {
  return platform.services.billing.accounts.credit.balance(organizationId);
}

// ---------------------------------------------------------------- concurrency bursts

/** Requests of a concurrency burst. */
export const N = 100;

export interface Outcome {
  ok: number;
  refused: Record<string, number>;
  estimate: bigint;
  finalBalance: bigint;
  billed: bigint;
}

export async function burst(instances: TestPlatform[], org: TestOrg, body: unknown): Promise<Record<string, number> & { ok: number }> {
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

export async function creditRun(instances: TestPlatform[], startMicros: bigint): Promise<Outcome> {
  const [platform] = instances;
  const org = await createOrg(platform, 'burst');
  await platform.services.billing.accounts.setMode(org.id, 'prepaid');
  await platform.services.billing.accounts.credit.add(org.id, startMicros, 'burst');
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
    finalBalance: await platform.services.billing.accounts.credit.balance(org.id),
    billed: usage._sum.billedMicros ?? 0n,
  };
}

export function checkCredit(outcome: Outcome, startMicros: bigint, label: string): void {
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

/**
 * Two platforms sharing a database (and Redis, when `config` names one), started before the
 * suite and closed after it; `config` is read in beforeAll (a test database's url is known then).
 */
export function twoInstances(config: () => Partial<Config>): () => TestPlatform[] {
  let instances: TestPlatform[] = [];
  beforeAll(async () => {
    const first = await startTestPlatform({ logLevel: 'silent', ...config() }, { catalog: pricedCatalog() });
    const second = await startTestPlatform({ logLevel: 'silent', ...config() }, { catalog: pricedCatalog() }, { adminKey: first.adminKey });
    instances = [first, second];
  }, 60_000);
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.close()));
  });
  return () => instances;
}

// ---------------------------------------------------------------- Redis outages

/** A platform whose Redis is reached through a relay the suite can cut, and an organization of it. */
export function behindRelay(label: string): { relay: CuttableRelay; platform(): TestPlatform; org(): TestOrg } {
  const relay = new CuttableRelay();
  let platform: TestPlatform;
  let org: TestOrg;
  beforeAll(async () => {
    await relay.open();
    platform = await startTestPlatform({ logLevel: 'info', redisUrl: relay.url }, { catalog: pricedCatalog() });
    org = await createOrg(platform, label);
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    await relay.cut().catch(() => undefined);
  });
  return { relay, platform: () => platform, org: () => org };
}

/** A counter of the platform's metrics with reason redis_unavailable (0 when never counted). */
export async function localDecisions(platform: TestPlatform, metric: string): Promise<number> {
  const text = await (await platform.mgmt('/api/v1/metrics')).text();
  return Number(new RegExp(`${metric}\\{reason="redis_unavailable"\\} (\\d+)`).exec(text)?.[1] ?? 0);
}

