// The health report is made at most once a second: a health endpoint polled by load
// balancers and monitors does not ping the database on every call.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HEALTH_REPORT_TTL_MS, HealthService, type HealthStatus } from '../../server/health/health-service.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('HealthService', () => {
  it('serves one report for the cache time, then checks again', async () => {
    let probes = 0;
    let status: HealthStatus = 'healthy';
    const health = new HealthService(2_000, 100);
    health.register({ id: 'db', name: 'db', critical: true, probe: async () => (probes++, status) });
    const [a, b] = await Promise.all([health.report(), health.report()]); // concurrent callers share one check
    expect(a).toBe(b);
    await health.report();
    expect(probes).toBe(1);
    status = 'offline';
    expect((await health.report()).status).toBe('healthy'); // still the cached report
    await sleep(120);
    expect((await health.report()).status).toBe('offline');
    expect(probes).toBe(2);
  });

  it('checks again when the clock is set back', async () => {
    let probes = 0;
    const health = new HealthService(2_000, 60_000);
    health.register({ id: 'db', name: 'db', critical: true, probe: async () => (probes++, 'healthy') });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      await health.report();
      vi.setSystemTime(Date.now() - 3_600_000);
      await health.report();
      expect(probes).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('checks every time with a cache time of 0', async () => {
    let probes = 0;
    const health = new HealthService(2_000, 0);
    health.register({ id: 'db', name: 'db', critical: true, probe: async () => (probes++, 'healthy') });
    await health.report();
    await health.report();
    expect(probes).toBe(2);
  });
});

describe('GET /api/v1/health', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform?.close());

  it('caches for about a second: a call 999 ms after another does not ping the database, one 2 s after does', async () => {
    const ping = vi.spyOn(platform.services.database, 'ping');
    // Only Date is faked: the cache reads the time from it, while I/O and timers run as usual.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const start = Date.now() + 10_000; // past any report an earlier test left
      const healthAt = async (ms: number) => {
        vi.setSystemTime(start + ms);
        expect((await platform.mgmt('/api/v1/health')).status).toBe(200);
        return ping.mock.calls.length;
      };
      expect(await healthAt(0)).toBe(1);
      expect(await healthAt(999)).toBe(1);
      expect(await healthAt(2_000)).toBe(2);
    } finally {
      vi.useRealTimers();
      ping.mockRestore();
    }
  });

  it('pings the database once for a burst of calls', async () => {
    const ping = vi.spyOn(platform.services.database, 'ping');
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 10 }, () => platform.mgmt('/api/v1/health')));
    for (const res of answers) expect(res.status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await platform.mgmt('/api/v1/health')).status).toBe(200);
    // One ping per report, one report per TTL (on a loaded machine the 15 calls may span more than one).
    const windows = Math.floor((Date.now() - started) / HEALTH_REPORT_TTL_MS) + 1;
    expect(ping.mock.calls.length).toBeGreaterThanOrEqual(1);
    expect(ping.mock.calls.length).toBeLessThanOrEqual(windows);
    expect(ping.mock.calls.length).toBeLessThan(15);
  });
});
