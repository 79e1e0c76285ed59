// Rate limits per API key and per organization, counted in process (no Redis): the sliding
// window itself on a controlled clock, then 429 QUOTA_EXCEEDED end to end with Retry-After
// and X-RateLimit-*, on every operation that declares 429.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../generated/contract/routes.js';
import { isInferenceOperation } from '../../server/http/admission/billing.js';
import { loadConfig } from '../../server/config.js';
import { LocalWindows } from '../../server/limits/window.js';
import { sampleRequest } from '../support/requests.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog, settled, type TestOrg } from './support.js';

describe('sliding window (in process)', () => {
  const at = (seconds: number) => () => Date.UTC(2026, 10, 23, 12, 0, 0) + seconds * 1000;

  it('admits up to the limit in a minute, then refuses until the oldest bucket leaves the window', async () => {
    let now = at(0);
    const windows = new LocalWindows(() => now());
    const counter = [{ key: 'k', limit: 3, cost: 1 }];
    for (const s of [0, 10, 20]) {
      now = at(s);
      expect(await windows.take(counter)).toEqual({ allowed: true });
    }
    now = at(30);
    // The first request (second 0) leaves at second 60: 30 s from now; the last at 80.
    expect(await windows.take(counter)).toEqual({ allowed: false, index: 0, limit: 3, retryAfterS: 30, resetS: 50 });
    now = at(59);
    expect((await windows.take(counter)).allowed).toBe(false);
    now = at(60);
    expect((await windows.take(counter)).allowed).toBe(true);
    expect((await windows.take(counter)).allowed).toBe(false);
  });

  it('cannot be doubled by a burst across a minute boundary (unlike a fixed window)', async () => {
    let now = at(59);
    const windows = new LocalWindows(() => now());
    const counter = [{ key: 'k', limit: 5, cost: 1 }];
    for (let i = 0; i < 5; i++) expect((await windows.take(counter)).allowed).toBe(true);
    now = at(61);
    expect((await windows.take(counter)).allowed).toBe(false);
  });

  it('takes several counters all or nothing, and names the one that refused', async () => {
    const windows = new LocalWindows(at(0));
    const key = { key: 'key', limit: 10, cost: 1 };
    const tokens = { key: 'tokens', limit: 100, cost: 60 };
    expect((await windows.take([key, tokens])).allowed).toBe(true);
    const refused = await windows.take([key, tokens]);
    expect(refused).toMatchObject({ allowed: false, index: 1, limit: 100 });
    // The refused request took nothing from the first counter either.
    expect(await windows.take([{ ...key, cost: 9 }])).toEqual({ allowed: true });
  });

  it('waits for enough of the window to free for a large cost, and a whole window for a cost above the limit', async () => {
    let now = at(0);
    const windows = new LocalWindows(() => now());
    for (const [s, cost] of [[0, 40], [20, 40]] as const) {
      now = at(s);
      await windows.take([{ key: 't', limit: 100, cost }]);
    }
    now = at(30);
    // 80 used: a cost of 30 fits once the first bucket left (at second 60): 30 s; a cost of
    // 70 once both did (second 20 leaves at 80): 50 s.
    expect(await windows.take([{ key: 't', limit: 100, cost: 30 }])).toMatchObject({ retryAfterS: 30 });
    expect(await windows.take([{ key: 't', limit: 100, cost: 70 }])).toMatchObject({ retryAfterS: 50 });
    expect(await windows.take([{ key: 't', limit: 100, cost: 101 }])).toMatchObject({ allowed: false, retryAfterS: 60 });
  });

  it('forgets counters whose window is empty', async () => {
    let now = at(0);
    const windows = new LocalWindows(() => now());
    await windows.take([{ key: 'a', limit: 1, cost: 1 }]);
    now = at(30);
    await windows.take([{ key: 'b', limit: 1, cost: 1 }]);
    now = at(61);
    windows.sweep();
    expect(windows.size).toBe(1);
  });
});

describe('429 QUOTA_EXCEEDED', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
  });
  afterAll(() => platform?.close());

  const quotas = () => platform.services.limits.quotas;
  const chat = (org: TestOrg, body: unknown = ask(), headers: Record<string, string> = {}, key = org.key) =>
    platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key, headers, body: JSON.stringify(body) });

  async function secondKey(org: TestOrg): Promise<{ key: string; id: string }> {
    const { key, plaintext } = await platform.services.identity.keys.issue(org.id, { scopes: ['inference'], label: 'second', expiresAt: null });
    return { key: plaintext, id: key.id };
  }

  it('refuses the request past the organization limit with Retry-After, X-RateLimit-* and a retryable 1019', async () => {
    const org = await createOrg(platform, 'rpm');
    await quotas().set(org.id, null, { requestsPerMinute: 3, tokensPerMinute: null });
    for (let i = 0; i < 3; i++) expect((await chat(org)).status).toBe(200);
    const refused = await chat(org);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('3');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(retryAfter);
    const body = await refused.json();
    expect(body.error).toMatchObject({ code: 1019, name: 'QUOTA_EXCEEDED', retryable: true, category: 'client' });
    expect(body.error.message).toContain("organization's limit of 3 requests per minute");
    expect(body.trace_id).toBe(refused.headers.get('x-trace-id'));
  });

  it('limits each key on its own, and the organization over all its keys', async () => {
    const org = await createOrg(platform, 'perkey');
    const other = await secondKey(org);
    await quotas().set(org.id, org.keyId, { requestsPerMinute: 2, tokensPerMinute: null });
    await quotas().set(org.id, null, { requestsPerMinute: 4, tokensPerMinute: null });
    expect((await chat(org)).status).toBe(200);
    expect((await chat(org)).status).toBe(200);
    const keyRefused = await chat(org);
    expect(keyRefused.status).toBe(429);
    expect((await keyRefused.json()).error.message).toContain("API key's limit of 2 requests");
    // The other key has no limit of its own: only the organization's (4, of which 2 are used).
    expect((await chat(org, ask(), {}, other.key)).status).toBe(200);
    expect((await chat(org, ask(), {}, other.key)).status).toBe(200);
    const orgRefused = await chat(org, ask(), {}, other.key);
    expect(orgRefused.status).toBe(429);
    expect(orgRefused.headers.get('x-ratelimit-limit')).toBe('4');
    // Another organization is not affected.
    expect((await chat(await createOrg(platform, 'bystander'))).status).toBe(200);
  });

  it('counts tokens per minute at their worst case (prompt estimate + max_tokens), and names a request too large for the limit', async () => {
    const org = await createOrg(platform, 'tpm');
    await quotas().set(org.id, null, { requestsPerMinute: null, tokensPerMinute: 600 });
    // ~70 prompt tokens + 150 max_tokens: two fit in 600, a third does not.
    expect((await chat(org, ask(undefined, { max_tokens: 150 }))).status).toBe(200);
    expect((await chat(org, ask(undefined, { max_tokens: 150 }))).status).toBe(200);
    const refused = await chat(org, ask(undefined, { max_tokens: 150 }));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-limit')).toBe("600");
    expect((await refused.json()).error.message).toContain('600 tokens per minute');
    // A smaller request still fits in what is left.
    expect((await chat(org, ask(undefined, { max_tokens: 5 }))).status).toBe(200);

    const huge = await chat(org, ask(undefined, { max_tokens: 1000 }));
    expect(huge.status).toBe(429);
    expect(huge.headers.get('retry-after')).toBe('60');
    expect((await huge.json()).error.message).toMatch(/exceed .* limit of 600 tokens per minute; lower max_tokens/);
  });

  it('counts tokens per minute per key: the key past its limit is refused, another key of the organization is not', async () => {
    const org = await createOrg(platform, 'keytpm');
    const other = await secondKey(org);
    await quotas().set(org.id, org.keyId, { requestsPerMinute: null, tokensPerMinute: 600 });
    // ~70 prompt tokens + 150 max_tokens: two fit in 600, a third does not.
    const body = ask(undefined, { max_tokens: 150 });
    expect((await chat(org, body)).status).toBe(200);
    expect((await chat(org, body)).status).toBe(200);
    const refused = await chat(org, body);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('600');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await refused.json()).error).toMatchObject({ name: 'QUOTA_EXCEEDED', message: expect.stringContaining("API key's limit of 600 tokens per minute") });
    // The organization has no limit: its other key's tokens are its own.
    for (let i = 0; i < 3; i++) expect((await chat(org, body, {}, other.key)).status).toBe(200);
  });

  it('answers 429 QUOTA_EXCEEDED on every operation that declares 429, and nowhere else', async () => {
    const org = await createOrg(platform, 'everyroute');
    const { plaintext: key } = await platform.services.identity.keys.issue(org.id, { scopes: ['inference', 'chat'], label: 'inference', expiresAt: null });
    // A quota of 0 refuses every request it applies to, before its handler runs.
    await quotas().set(org.id, null, { requestsPerMinute: 0, tokensPerMinute: null });
    const limited = routes.filter((r) => r.api === 'api' && '429' in r.errorBodies);
    // The inference operations (completions, responses, embeddings and their aliases).
    expect(limited.length).toBeGreaterThanOrEqual(11);
    for (const route of limited) expect(isInferenceOperation(route), route.operationId).toBe(true);
    // ...and every metered model call is limited and gated (the Chat API's message included).
    for (const route of routes.filter(isInferenceOperation)) expect(Object.keys(route.errorBodies), route.operationId).toEqual(expect.arrayContaining(['402', '429']));
    for (const route of limited) {
      const { path, init } = sampleRequest(route);
      const res = await platform.api(path, { ...init, key });
      expect(res.status, `${route.operationId} ${res.status === 429 ? '' : await res.clone().text()}`).toBe(429);
      const body = await res.json();
      // The Chat API answers in its FastAPI `detail` shape.
      if (route.errorBodies[429] === 'DetailError') expect(body.detail, route.operationId).toMatch(/limit of 0 requests per minute/);
      else expect(body.error.name, route.operationId).toBe('QUOTA_EXCEEDED');
      expect(res.headers.get('retry-after'), route.operationId).not.toBeNull();
    }
    // The model catalog does not declare 429: never rate-limited.
    expect((await platform.api('/ai/v2/models', { key })).status).toBe(200);
  });

  it('runs before idempotency and billing: a refused request holds no credit, and its retry with the same Idempotency-Key runs', async () => {
    const org = await createOrg(platform, 'order');
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    await platform.services.billing.accounts.credit.add(org.id, 10_000_000n, 'test');
    await quotas().set(org.id, null, { requestsPerMinute: 1, tokensPerMinute: null });
    expect((await chat(org)).status).toBe(200);
    const idempotencyKey = randomUUID();
    const refused = await chat(org, ask(), { 'idempotency-key': idempotencyKey });
    expect(refused.status).toBe(429);
    await settled(platform, org.id);
    expect(await platform.services.database.prisma.billingReservation.count({ where: { organizationId: org.id } })).toBe(1);

    await quotas().set(org.id, null, { requestsPerMinute: 10, tokensPerMinute: null });
    const retried = await chat(org, ask(), { 'idempotency-key': idempotencyKey });
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('reads quotas once per organization every few seconds, not per request; a change made here applies at once', async () => {
    const org = await createOrg(platform, 'cache');
    const first = await quotas().of(org.id);
    expect(await quotas().of(org.id)).toBe(first);
    await quotas().set(org.id, null, { requestsPerMinute: 1, tokensPerMinute: null });
    expect((await quotas().of(org.id)).organization).toEqual({ requestsPerMinute: 1, tokensPerMinute: null });
    await quotas().set(org.id, null, { requestsPerMinute: null, tokensPerMinute: null });
    expect((await quotas().of(org.id)).organization).toBeNull();
    await expect(quotas().set(org.id, randomUUID(), { requestsPerMinute: 1, tokensPerMinute: null })).rejects.toMatchObject({ errorName: 'NOT_FOUND' });
  });

  it('counts refusals in the metrics by scope and unit', async () => {
    const text = await (await platform.mgmt('/api/v1/metrics')).text();
    expect(text).toMatch(/rate_limit_refusals_total\{scope="organization",unit="requests"\} [1-9]/);
    expect(text).toMatch(/rate_limit_refusals_total\{scope="key",unit="requests"\} [1-9]/);
    expect(text).toMatch(/rate_limit_refusals_total\{scope="organization",unit="tokens"\} [1-9]/);
    expect(text).toMatch(/rate_limit_refusals_total\{scope="key",unit="tokens"\} [1-9]/);
  });
});

describe('plan tiers (RATE_LIMIT_PLANS)', () => {
  let planned: TestPlatform;
  beforeAll(async () => {
    planned = await startTestPlatform(
      {
        logLevel: 'silent',
        rateLimitPlans: { free: { organization: { rpm: 3 }, key: { rpm: 2 } }, pro: { organization: { rpm: 5 } } },
        rateLimitDefaultPlan: 'free',
      },
      { catalog: pricedCatalog() },
    );
  });
  afterAll(() => planned?.close());

  const statuses = async (key: string, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await planned.api('/ai/v2/guarded/chat/completions', { method: 'POST', key, body: JSON.stringify(ask()) })).status);
    return out;
  };

  it('gives every organization its plan’s default quotas: per key, and for the whole organization', async () => {
    const org = await createOrg(planned, 'freeplan');
    // The default plan: 2 per key per minute...
    expect(await statuses(org.key, 3)).toEqual([200, 200, 429]);
    // ...and 3 per organization: a second key gets the one left.
    const { plaintext: other } = await planned.services.identity.keys.issue(org.id, { scopes: ['inference'], label: 'other', expiresAt: null });
    expect(await statuses(other, 2)).toEqual([200, 429]);
  });

  it('takes an assigned plan, and rows of rate_limits override the plan’s quotas', async () => {
    const org = await createOrg(planned, 'proplan');
    const { quotas } = planned.services.limits;
    await quotas.setPlan(org.id, 'pro');
    // pro: 5 per organization, no per-key default.
    expect(await statuses(org.key, 6)).toEqual([200, 200, 200, 200, 200, 429]);

    const other = await createOrg(planned, 'override');
    await quotas.set(other.id, other.keyId, { requestsPerMinute: 1, tokensPerMinute: null });
    await quotas.set(other.id, null, { requestsPerMinute: 100, tokensPerMinute: null });
    expect(await statuses(other.key, 2)).toEqual([200, 429]);
    await expect(quotas.setPlan(other.id, 'gold')).rejects.toThrow(/No rate-limit plan gold/);
  });
});

describe('RATE_LIMIT_PLANS configuration', () => {
  it('reads plans as JSON and checks the default plan names one', () => {
    const config = loadConfig({ RATE_LIMIT_PLANS: '{"free":{"organization":{"rpm":60,"tpm":100000},"key":{"rpm":20}}}', RATE_LIMIT_DEFAULT_PLAN: 'free' });
    expect(config.rateLimitPlans).toEqual({ free: { organization: { rpm: 60, tpm: 100_000 }, key: { rpm: 20 } } });
    expect(config.rateLimitDefaultPlan).toBe('free');
    expect(() => loadConfig({ RATE_LIMIT_PLANS: '{"free":{"organization":{"rpm":-1}}}' })).toThrow(/RATE_LIMIT_PLANS/);
    expect(() => loadConfig({ RATE_LIMIT_PLANS: 'free: 60' })).toThrow(/expected JSON/);
    expect(() => loadConfig({ RATE_LIMIT_DEFAULT_PLAN: 'gold' })).toThrow(/not a plan of RATE_LIMIT_PLANS/);
    expect(loadConfig({}).rateLimitPlans).toEqual({});
  });
});
