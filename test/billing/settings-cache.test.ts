// The billing settings admission reads are cached per organization: reloaded after the TTL
// or at once when a change is announced, on this instance (in process) and on the others
// (through Redis); end to end, a mode set on one instance gates the next request on it and
// reaches a second instance on PostgreSQL + Redis.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BILLING_SETTINGS_CACHE_MS, localSettingsChanges, redisSettingsChanges, SettingsCache, type SettingsChanges } from '../../server/billing/settings-cache.js';
import { createLogger } from '../../server/logging.js';
import { connectRedis, type RedisConnections } from '../../server/storage/redis.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { describeRedis, TEST_REDIS_URL } from '../support/redis.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog } from './support.js';

/** A cache over a counter that answers how many times each organization was loaded. */
function countingCache(changes: SettingsChanges, clock: () => number) {
  const loads = new Map<string, number>();
  const cache = new SettingsCache(async (org) => {
    const n = (loads.get(org) ?? 0) + 1;
    loads.set(org, n);
    return n;
  }, changes, clock);
  return { cache, loads: (org: string) => loads.get(org) ?? 0 };
}

describe('SettingsCache', () => {
  it('loads an organization once per TTL, and again at once after a change', async () => {
    let now = 0;
    const { cache, loads } = countingCache(localSettingsChanges(), () => now);
    expect(await Promise.all([cache.get('a'), cache.get('a'), cache.get('b')])).toEqual([1, 1, 1]);
    now = BILLING_SETTINGS_CACHE_MS - 1;
    expect(await cache.get('a')).toBe(1);
    await cache.changed('a');
    expect(await cache.get('a')).toBe(2);
    expect(await cache.get('b')).toBe(1);
    now = 2 * BILLING_SETTINGS_CACHE_MS;
    expect(await cache.get('b')).toBe(2);
    expect(loads('a')).toBe(2);
  });

  it('does not remember a failed load', async () => {
    let fail = true;
    const cache = new SettingsCache(async () => {
      if (fail) throw new Error('database down');
      return 'ok';
    }, localSettingsChanges(), () => 0);
    await expect(cache.get('a')).rejects.toThrow('database down');
    fail = false;
    expect(await cache.get('a')).toBe('ok');
  });
});

describeRedis('SettingsCache across instances through Redis', () => {
  const logger = createLogger('silent');
  let connections: RedisConnections[] = [];
  let buses: SettingsChanges[] = [];
  beforeAll(async () => {
    connections = await Promise.all([connectRedis(TEST_REDIS_URL, logger), connectRedis(TEST_REDIS_URL, logger)]);
    buses = await Promise.all(connections.map((c) => redisSettingsChanges(c, logger)));
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await Promise.all(connections.map((c) => c.close()));
  });

  it("drops the other instance's entry when a change is announced (the clock never moves: only the message can)", async () => {
    const clock = () => 0;
    const a = countingCache(buses[0], clock);
    const b = countingCache(buses[1], clock);
    const org = randomUUID();
    const other = randomUUID();
    await Promise.all([a.cache.get(org), b.cache.get(org), b.cache.get(other)]);
    await a.cache.changed(org);
    expect(a.loads(org)).toBe(1);
    expect(await a.cache.get(org)).toBe(2);
    await vi.waitFor(async () => expect(await b.cache.get(org)).toBe(2), { timeout: 10_000, interval: 20 });
    expect(await b.cache.get(other)).toBe(1);
  });
});

describe('billing mode changes on a running platform', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
  });
  afterAll(() => platform?.close());

  it('gates the very next request after setMode, and lifts the gate as soon', async () => {
    const org = await createOrg(platform, 'cached');
    const chat = async () => (await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status;
    expect(await chat()).toBe(200);
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    expect(await chat()).toBe(402);
    await platform.services.billing.accounts.setMode(org.id, 'unmetered');
    expect(await chat()).toBe(200);
    await platform.services.billing.accounts.setWeeklyCap(org.id, 5n);
    expect(await platform.services.billing.accounts.settings(org.id)).toEqual({ mode: 'unmetered', weeklyCapMicros: 5n });
  });
});

describePostgres('two instances on PostgreSQL + Redis', () => {
  const database = useTestDatabase('billing_settings');
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

    it('a mode set on one instance gates requests on the other', async () => {
      const [first, second] = instances;
      const org = await createOrg(first, 'shared');
      const chat = async () => (await second.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status;
      expect(await chat()).toBe(200);
      await first.services.billing.accounts.setMode(org.id, 'prepaid');
      await vi.waitFor(async () => expect(await chat()).toBe(402), { timeout: 10_000, interval: 50 });
    });
  });
});
