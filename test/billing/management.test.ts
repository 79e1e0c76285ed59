// The billing operations of the management API: the billing account, adding credit (applied
// once per Idempotency-Key; the next request after a 402 is served), and usage per period
// grouped by model, key or product; each behind its scope.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope } from '../../generated/contract/routes.js';
import { nextWeekStart, weekStart } from '../../server/billing/pricing.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, settled, pricedCatalog, type TestOrg } from './support.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
});
afterAll(() => platform?.close());

const billing = () => platform.services.billing;

async function keyWith(org: TestOrg, scopes: Scope[]): Promise<string> {
  return (await platform.services.identity.keys.issue(org.id, { scopes, label: scopes.join(' '), expiresAt: null })).plaintext;
}

const json = (body: unknown) => JSON.stringify(body);

describe('GET /api/v1/billing', () => {
  it("shows an organization's mode, balance, holds, weekly cap and spend, week boundaries and plans", async () => {
    const org = await createOrg(platform, 'account');
    const reader = await keyWith(org, ['billing:read']);
    const fresh = await (await platform.mgmt('/api/v1/billing', { key: reader })).json();
    expect(fresh.data).toMatchObject({ mode: 'unmetered', balanceMicros: 0, reservedMicros: 0, availableMicros: 0, weeklyCapMicros: null, weekSpentMicros: 0, codingPlans: [] });

    await billing().accounts.setMode(org.id, 'prepaid');
    await billing().accounts.credit.add(org.id, 10_000_000n, 'test');
    await billing().accounts.setWeeklyCap(org.id, 50_000_000n);
    await billing().accounts.setCodingPlan(org.id, 'code-assist', { allowanceMicros: 20_000_000n, topupAvailable: true, period: 'week' });
    expect((await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: json(ask()) })).status).toBe(200);
    await settled(platform, org.id);
    const [usage] = await platform.services.database.prisma.usageRecord.findMany({ where: { organizationId: org.id } });

    const res = await platform.mgmt('/api/v1/billing', { key: reader });
    expect(res.status).toBe(200);
    const { data, meta } = await res.json();
    const spent = Number(usage.billedMicros);
    expect(data).toEqual({
      mode: 'prepaid',
      balanceMicros: 10_000_000 - spent,
      reservedMicros: 0,
      availableMicros: 10_000_000 - spent,
      weeklyCapMicros: 50_000_000,
      weekSpentMicros: spent,
      weekStartsAt: weekStart().getTime(),
      weekResetsAt: nextWeekStart().getTime(),
      codingPlans: [
        { product: 'code-assist', period: 'week', allowanceMicros: 20_000_000, usedMicros: 0, reservedMicros: 0, periodStartsAt: weekStart().getTime(), topupAvailable: true },
      ],
    });
    expect(meta.requestId).toBe(res.headers.get('x-trace-id'));
  });

  it('needs billing:read (403 without it, 401 without a key)', async () => {
    const org = await createOrg(platform, 'noread');
    const res = await platform.mgmt('/api/v1/billing', { key: org.key });
    expect(res.status).toBe(403);
    expect((await res.json()).trace_id).toBeTruthy();
    expect((await platform.mgmt('/api/v1/billing', { key: null })).status).toBe(401);
  });
});

describe('POST /api/v1/billing/credit', () => {
  it('adds credit: a 402 organization is served from the next request, and a retried top-up is applied once', async () => {
    const org = await createOrg(platform, 'topup');
    await billing().accounts.setMode(org.id, 'prepaid');
    const chat = () => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: json(ask()) });
    expect((await chat()).status).toBe(402);

    const manager = await keyWith(org, ['billing:manage']);
    const idempotencyKey = randomUUID();
    const add = () =>
      platform.mgmt('/api/v1/billing/credit', { method: 'POST', key: manager, headers: { 'idempotency-key': idempotencyKey }, body: json({ amountMicros: 5_000_000, reason: 'invoice 42' }) });
    const res = await add();
    expect(res.status).toBe(201);
    const { data } = await res.json();
    expect(data).toMatchObject({ amountMicros: 5_000_000, reason: 'invoice 42', balanceMicros: 5_000_000 });
    expect(typeof data.id).toBe('string');
    expect(Math.abs(data.createdAt - Date.now())).toBeLessThan(60_000);

    const again = await add();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await billing().accounts.credit.balance(org.id)).toBe(5_000_000n);

    expect((await chat()).status).toBe(200);
  });

  it('does not clear a reached weekly cap', async () => {
    const org = await createOrg(platform, 'capcredit');
    await billing().accounts.setMode(org.id, 'prepaid');
    await billing().accounts.setWeeklyCap(org.id, 1n);
    const manager = await keyWith(org, ['billing:manage']);
    expect((await platform.mgmt('/api/v1/billing/credit', { method: 'POST', key: manager, body: json({ amountMicros: 50_000_000 }) })).status).toBe(201);
    const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: json(ask()) });
    expect(res.status).toBe(429);
    expect((await res.json()).error.name).toBe('SPENDING_LIMIT_EXCEEDED');
  });

  it('refuses a non-positive or unknown amount field (422 or 400), and a key without billing:manage (403)', async () => {
    const org = await createOrg(platform, 'badcredit');
    const manager = await keyWith(org, ['billing:manage']);
    for (const body of [{ amountMicros: 0 }, { amountMicros: -5 }, { amountMicros: 1.5 }, { amountMicros: 10, extra: true }, {}]) {
      const res = await platform.mgmt('/api/v1/billing/credit', { method: 'POST', key: manager, body: json(body) });
      expect([400, 422], JSON.stringify(body)).toContain(res.status);
      expect((await res.json()).trace_id).toBeTruthy();
    }
    const reader = await keyWith(org, ['billing:read']);
    expect((await platform.mgmt('/api/v1/billing/credit', { method: 'POST', key: reader, body: json({ amountMicros: 10 }) })).status).toBe(403);
    expect(await billing().accounts.credit.balance(org.id)).toBe(0n);
  });
});

describe('GET /api/v1/usage', () => {
  it('totals the period per model, per key and per product', async () => {
    const org = await createOrg(platform, 'usage');
    const reader = await keyWith(org, ['billing:read']);
    const since = Date.now() - 1;
    const call = (body: unknown, path = '/ai/v2/guarded/chat/completions') => platform.api(path, { method: 'POST', key: org.key, body: json(body) });
    expect((await call(ask())).status).toBe(200);
    expect((await call(ask(undefined, { model: 'cheap' }))).status).toBe(200);
    expect((await call(ask(), '/ai/v2/code-assist/chat/completions')).status).toBe(200);
    await settled(platform, org.id);
    const records = await platform.services.database.prisma.usageRecord.findMany({ where: { organizationId: org.id } });
    const sum = (rs: typeof records, f: 'inputTokens' | 'outputTokens') => rs.reduce((n, r) => n + r[f], 0);
    const until = Date.now() + 1_000;

    const byModel = await (await platform.mgmt(`/api/v1/usage?since=${since}&until=${until}`, { key: reader })).json();
    expect(byModel.data).toMatchObject({ since, until, groupBy: 'model' });
    expect(byModel.data.lines.map((l: { group: string; calls: number }) => [l.group, l.calls])).toEqual([
      ['cheap', 1],
      ['priced', 2],
    ]);
    expect(byModel.data.totals).toMatchObject({ calls: 3, inputTokens: sum(records, 'inputTokens'), outputTokens: sum(records, 'outputTokens') });
    const cost = records.reduce((n, r) => n + Number(r.costMicros), 0);
    expect(byModel.data.totals.costMicros).toBe(cost);

    const byKey = await (await platform.mgmt(`/api/v1/usage?since=${since}&until=${until}&groupBy=key`, { key: reader })).json();
    expect(byKey.data.lines).toEqual([expect.objectContaining({ group: org.keyId, calls: 3 })]);

    const byProduct = await (await platform.mgmt(`/api/v1/usage?since=${since}&until=${until}&groupBy=product`, { key: reader })).json();
    expect(byProduct.data.lines.map((l: { group: string | null; calls: number }) => [l.group, l.calls])).toEqual([
      ['code-assist', 1],
      [null, 2],
    ]);

    // Default period: this ISO week until now.
    const week = await (await platform.mgmt('/api/v1/usage', { key: reader })).json();
    expect(week.data.since).toBe(weekStart().getTime());
    expect(week.data.totals.calls).toBe(3);
    // A period before the calls is empty.
    const before = await (await platform.mgmt(`/api/v1/usage?since=0&until=${since}`, { key: reader })).json();
    expect(before.data).toMatchObject({ lines: [], totals: { calls: 0, inputTokens: 0, outputTokens: 0, costMicros: 0, billedMicros: 0 } });
  });

  it('refuses a period that ends before it starts (422), a bad groupBy (400/422), and a key without billing:read (403)', async () => {
    const org = await createOrg(platform, 'badusage');
    const reader = await keyWith(org, ['billing:read']);
    const reversed = await platform.mgmt('/api/v1/usage?since=2000&until=1000', { key: reader });
    expect(reversed.status).toBe(422);
    expect((await reversed.json()).trace_id).toBeTruthy();
    for (const query of ['groupBy=team', 'since=-1', 'until=99999999999999999999', 'since=soon']) {
      expect([400, 422], query).toContain((await platform.mgmt(`/api/v1/usage?${query}`, { key: reader })).status);
    }
    expect((await platform.mgmt('/api/v1/usage', { key: org.key })).status).toBe(403);
  });
});
