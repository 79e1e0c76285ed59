// The week a spending cap counts, pinned at its boundary: ISO weeks in UTC, from Monday
// 00:00:00.000Z; Sunday 23:59:59Z still belongs to the week before, whatever the server's
// time zone. End to end on a controlled clock: a charge settled on Sunday night counts in
// that week's cap, and the request on Monday 00:00 starts from zero.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { nextWeekStart, periodStart, weekStart } from '../../server/billing/pricing.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog, settled } from './support.js';

const SUNDAY_NIGHT = new Date('2026-11-29T23:59:59.000Z');
const MONDAY = new Date('2026-11-30T00:00:00.000Z');

describe('weekStart', () => {
  const zone = process.env.TZ;
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  it.each(['UTC', 'Pacific/Kiritimati', 'America/Adak'])('puts Sunday 23:59:59Z in the week before Monday 00:00Z (server time zone %s)', (tz) => {
    process.env.TZ = tz;
    expect(SUNDAY_NIGHT.getUTCDay()).toBe(0);
    expect(weekStart(SUNDAY_NIGHT).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(nextWeekStart(SUNDAY_NIGHT).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(weekStart(new Date(MONDAY.getTime() - 1)).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(weekStart(MONDAY).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(nextWeekStart(MONDAY).toISOString()).toBe('2026-12-07T00:00:00.000Z');
    expect(periodStart('week', MONDAY)).toEqual(weekStart(MONDAY));
    expect(periodStart('month', new Date('2026-11-30T23:59:59.999Z')).toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(periodStart('month', new Date('2026-12-01T00:00:00.000Z')).toISOString()).toBe('2026-12-01T00:00:00.000Z');
  });
});

describe('the weekly cap across the boundary (controlled clock)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await platform?.close();
  });

  it('counts a charge settled on Sunday 23:59:59Z in that week, and serves Monday 00:00Z from zero', async () => {
    const org = await createOrg(platform, 'boundary');
    const { billing } = platform.services;
    await billing.accounts.setMode(org.id, 'prepaid');
    await billing.accounts.addCredit(org.id, 10_000_000n, 'test');
    await billing.accounts.setWeeklyCap(org.id, 250_000n);
    const chat = () => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) });

    vi.useFakeTimers({ toFake: ['Date'], now: SUNDAY_NIGHT });
    expect((await chat()).status).toBe(200);
    await settled(platform, org.id);
    const sunday = await billing.accounts.account(org.id);
    expect(sunday.weekStart.toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(sunday.weekSpentMicros).toBeGreaterThan(100_000n);
    // Still Sunday: a second request would pass the cap.
    vi.setSystemTime(new Date(SUNDAY_NIGHT.getTime() + 500));
    const refused = await chat();
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.message).toContain('resets at 2026-11-30T00:00:00.000Z');

    vi.setSystemTime(MONDAY);
    expect((await billing.accounts.account(org.id)).weekSpentMicros).toBe(0n);
    expect((await chat()).status).toBe(200);
    await settled(platform, org.id);
    const monday = await billing.accounts.account(org.id);
    expect(monday.weekStart.toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(monday.weekSpentMicros).toBeGreaterThan(0n);
    expect(monday.weekSpentMicros).toBeLessThan(sunday.weekSpentMicros * 2n);
  });
});
