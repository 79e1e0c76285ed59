// Inference Idempotency-Keys while Redis cannot answer: the SDK sends a key with every call,
// so an outage must not fail them. Each instance keeps its keys in memory meanwhile (logged
// once each way, counted in idempotency_local_decisions_total), and a key it kept there is
// still replayed after Redis is back.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describeRedis } from '../support/redis.js';
import { ask, behindRelay, localDecisions, pricedCatalog, type TestOrg } from '../billing/support.js';

describeRedis('inference Idempotency-Keys while Redis is down', () => {
  const { relay, platform: running, org: caller } = behindRelay('idemdown');
  let platform: TestPlatform;
  let org: TestOrg;
  beforeAll(() => {
    platform = running();
    org = caller();
  });

  const chat = (key: string) =>
    platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, headers: { 'idempotency-key': key }, body: JSON.stringify(ask()) });
  const metric = () => localDecisions(platform, 'idempotency_local_decisions_total');
  const logged = (text: string) => platform.logs.filter((l) => l.includes(text)).length;
  const kept = randomUUID();

  it('keeps keys in Redis while it answers', async () => {
    const res = await chat(randomUUID());
    expect(res.status).toBe(200);
    expect(await metric()).toBe(0);
  });

  it('answers and replays a key while Redis is unreachable, from this instance’s memory, logged once and counted', async () => {
    await relay.cut();
    const first = await chat(kept);
    expect(first.status).toBe(200);
    const again = await chat(kept);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await again.json()).id).toBe((await first.json()).id);
    // The claim was decided locally; the repeat found the key in memory without asking Redis.
    expect(await metric()).toBe(1);
    expect(logged('Redis cannot answer: inference Idempotency-Keys are kept per instance')).toBe(1);
  }, 30_000);

  it('shares keys through Redis again once it is back, and still replays the key kept in memory', async () => {
    await relay.open();
    await vi.waitFor(
      async () => {
        expect((await chat(randomUUID())).status).toBe(200);
        expect(logged('Redis answers again: inference Idempotency-Keys are shared')).toBe(1);
      },
      { timeout: 20_000, interval: 200 },
    );
    const again = await chat(kept);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  }, 30_000);
});

describe('(no Redis configured)', () => {
  it('has no fallback metric to report', async () => {
    const platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
    try {
      expect(await (await platform.mgmt('/api/v1/metrics')).text()).not.toContain('idempotency_local_decisions_total');
    } finally {
      await platform.close();
    }
  });
});
