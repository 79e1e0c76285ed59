// Circuit state crosses instances through Redis: an outage one instance sees steers every
// instance, and an instance that starts during an outage knows about it.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { buildCatalog } from '../../server/gateway/catalog.js';
import type { TrialGate } from '../../server/gateway/circuit-trials.js';
import { DeploymentHealth } from '../../server/gateway/health.js';
import { CIRCUIT_HASH, shareHealth, sharedTrialGate, TRIAL_KEY } from '../../server/gateway/shared-health.js';
import { connectRedis, type RedisConnections } from '../../server/storage/redis.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';

const log = pino({ level: 'silent' });
// Deployment ids of this run only: other suites' platforms share the Redis hash.
const deployment = `shared-test-${randomUUID()}`;
const catalog = buildCatalog(
  {
    providers: [{ id: 'p', type: 'local' }],
    deployments: [{ id: deployment, provider: 'p', model: 'x' }],
    models: [{ id: 'm', family: 'local', context_window: 100, max_output_tokens: 10, deployments: [deployment] }],
    routing: { tiers: { tier_1: ['m'], tier_2: ['m'], tier_3: ['m'] } },
    circuit: { failure_threshold: 2, cooldown_ms: 60_000 },
  },
  'test',
  {},
);

const connections: RedisConnections[] = [];
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
  await connections[0]?.client.hdel(CIRCUIT_HASH, deployment);
  await connections[0]?.client.del(`${TRIAL_KEY}:${deployment}`);
  for (const c of connections) await c.close();
});

async function instance(): Promise<DeploymentHealth> {
  const redis = await connectRedis(TEST_REDIS_URL, log);
  connections.push(redis);
  const health = new DeploymentHealth(catalog);
  stops.push(await shareHealth(health, redis, log));
  return health;
}

async function eventually(check: () => boolean, limitMs = 2_000): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return Date.now() - started;
}

describeRedis('circuit state shared through Redis', () => {
  it('opens on every instance when one sees the outage, and closes everywhere after a good trial', async () => {
    const a = await instance();
    const b = await instance();
    for (let i = 0; i < 2; i++) a.begin(deployment)({ ok: false, error: 'refused', countsAsFailure: true });
    expect(a.circuit(deployment)).toBe('open');
    const delay = await eventually(() => b.circuit(deployment) === 'open');
    expect(delay).toBeLessThan(1_000);
    expect(b.available(deployment)).toBe(false);

    // An instance that starts during the outage reads it from the hash.
    const c = await instance();
    expect(c.circuit(deployment)).toBe('open');

    a.probed(deployment, null);
    a.begin(deployment)({ ok: true, latencyMs: 5 });
    expect(a.circuit(deployment)).toBe('closed');
    await eventually(() => b.circuit(deployment) === 'closed' && c.circuit(deployment) === 'closed');
    expect(await connections[0].client.hexists(CIRCUIT_HASH, deployment)).toBe(0);
  });
});

describeRedis('trial calls shared through Redis', () => {
  it('lets one instance make each trial call of a slot, and another once the slot is over', async () => {
    const gates: TrialGate[] = [];
    for (let i = 0; i < 3; i++) {
      const redis = await connectRedis(TEST_REDIS_URL, log);
      connections.push(redis);
      gates.push(sharedTrialGate(redis, log));
    }
    const taken = await Promise.all(gates.map((gate) => gate(deployment, 200)));
    expect(taken.filter(Boolean)).toHaveLength(1);
    expect(await gates[1](deployment, 200)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await gates[2](deployment, 200)).toBe(true);
  });
});
