// Shared set-up of the billing suites: a platform whose catalog has priced models, and an
// organization with its own key.
import { expect, vi } from 'vitest';
import { buildCatalog, type Catalog } from '../../server/gateway/catalog.js';
import type { TestPlatform } from '../support/platform.js';

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
  const { key, plaintext } = await identity.keys.issue(org.id, { scopes: ['inference'], label: 'billing test', expiresAt: null });
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
      await platform.services.billing.drain();
      expect(await prisma.billingReservation.count({ where: { organizationId, settledAt: null } })).toBe(0);
    },
    { timeout: 10_000, interval: 20 },
  );
  await platform.services.billing.drain();
}

/** The ledger's sum and the account's counters agree, and nothing is held. */
export async function ledgerBalance(platform: TestPlatform, organizationId: string): Promise<bigint> {
  return platform.services.billing.credit.balance(organizationId);
}
