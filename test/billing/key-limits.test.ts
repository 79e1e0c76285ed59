// Per-key limits end to end on the embedded PGlite: a key's models (403 for one it may not
// call, routing and fallbacks kept to the allowed ones), its weekly cap (429 1005) and its
// share of the organization's credit (402), both held by the same reserve-then-settle
// admission as the organization's credit, exact under 100 concurrent requests; managed
// through createKey / updateKey. The same bursts across two instances with PostgreSQL and
// Redis are in key-limits.redis.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog, type TestOrg } from './support.js';
import { keyBurst, limitedKey } from './key-limits.suite.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
});
afterAll(() => platform?.close());

const chat = (key: string, body: unknown) => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key, body: JSON.stringify(body) });
const errorOf = async (res: Response) => `${res.status} ${(await res.json()).error?.name}`;

describe('key limits through the management API', () => {
  let org: TestOrg;
  let manager: string;
  beforeAll(async () => {
    org = await createOrg(platform, 'keymgmt');
    manager = (await platform.services.identity.keys.issue(org.id, { scopes: ['keys:manage', 'inference'] })).plaintext;
  });
  const mgmt = (path: string, method: string, body?: unknown) =>
    platform.mgmt(path, { method, key: manager, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });

  it('creates a key with limits, shows them, changes one and keeps the others', async () => {
    const created = await mgmt('/api/v1/keys', 'POST', { scopes: ['inference'], limits: { weeklyCapMicros: 5_000_000, allowedModels: ['cheap', 'local/*'] } });
    expect(created.status).toBe(201);
    const key = (await created.json()).data;
    expect(key.limits).toEqual({ weeklyCapMicros: 5_000_000, creditSharePercent: null, allowedModels: ['cheap', 'local/*'] });
    expect(await platform.services.billing.accounts.keyAccount(key.id)).toEqual({ weekSpentMicros: 0n, reservedMicros: 0n });

    const changed = await mgmt(`/api/v1/keys/${key.id}`, 'PATCH', { limits: { creditSharePercent: 25, allowedModels: null } });
    expect(changed.status).toBe(200);
    expect((await changed.json()).data.limits).toEqual({ weeklyCapMicros: 5_000_000, creditSharePercent: 25, allowedModels: null });
    expect((await (await mgmt(`/api/v1/keys/${key.id}`, 'GET')).json()).data.limits.creditSharePercent).toBe(25);
  });

  it('refuses an allow-list entry that is no model pattern (422), and a key changing its own limits (403)', async () => {
    expect((await mgmt('/api/v1/keys', 'POST', { scopes: ['inference'], limits: { allowedModels: ['gpt-4o/x/y'] } })).status).toBe(422);
    const self = (await (await mgmt('/api/v1/keys', 'GET')).json()).data.find((k: { scopes: string[] }) => k.scopes.includes('keys:manage'));
    const res = await mgmt(`/api/v1/keys/${self.id}`, 'PATCH', { limits: { weeklyCapMicros: null } });
    expect(res.status).toBe(403);
    expect(JSON.stringify(await res.json())).toContain('cannot change its own limits');
  });
});

describe('allowed models', () => {
  it('refuses a model the key may not call with 403 FORBIDDEN and serves the ones it may', async () => {
    const org = await createOrg(platform, 'allow');
    const { key } = await limitedKey(platform, org.id, { allowedModels: ['cheap'] });
    expect(await errorOf(await chat(key, ask()))).toBe('403 FORBIDDEN'); // model priced
    const served = await chat(key, ask(undefined, { model: 'cheap' }));
    expect(served.status).toBe(200);
    expect((await served.json()).model).toBe('cheap');
    // Auto-routing plans only the allowed models of every tier (here, tier_2 and tier_3 name only `priced`).
    const auto = await chat(key, { auto_routing: true, max_tokens: 20, messages: [{ role: 'user', content: 'Please analyse this step by step.' }] });
    expect(auto.status).toBe(200);
    expect((await auto.json()).model).toBe('cheap');
    const embed = await platform.api('/ai/v2/embeddings', { method: 'POST', key, body: JSON.stringify({ model: 'local-embedding', input: 'x' }) });
    expect(await errorOf(embed)).toBe('403 FORBIDDEN');
  });

  it('matches families and globs: local/* allows every local model, pri* only priced', async () => {
    const org = await createOrg(platform, 'family');
    const family = await limitedKey(platform, org.id, { allowedModels: ['local/*'] });
    expect((await chat(family.key, { model_family: 'local', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
    const glob = await limitedKey(platform, org.id, { allowedModels: ['pri*'] });
    expect((await chat(glob.key, ask())).status).toBe(200);
    expect(await errorOf(await chat(glob.key, ask(undefined, { model: 'cheap' })))).toBe('403 FORBIDDEN');
    const other = await limitedKey(platform, org.id, { allowedModels: ['openai/*'] });
    expect(await errorOf(await chat(other.key, { model_family: 'local', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }))).toBe('403 FORBIDDEN');
  });
});

describe('100 concurrent requests of a limited key, one instance (PGlite)', () => {
  it('a weekly cap: the key spends at most its cap, refusals are 429 SPENDING_LIMIT_EXCEEDED, the organization\'s other keys go on', async () => {
    const org = await createOrg(platform, 'keycap');
    const cap = 700_000n;
    const outcome = await keyBurst([platform], org, { weeklyCapMicros: Number(cap) }, { prepaidMicros: 100_000_000n });
    expect(Object.keys(outcome.refused)).toEqual(['429 SPENDING_LIMIT_EXCEEDED']);
    expect(outcome.keySpent).toBeLessThanOrEqual(cap);
    expect(outcome.keySpent).toBeGreaterThan(cap - outcome.estimate);
    expect((await chat(org.key, ask())).status).toBe(200);
  }, 60_000);

  it('a weekly cap binds on an unmetered organization too', async () => {
    const org = await createOrg(platform, 'keycapfree');
    const cap = 700_000n;
    const outcome = await keyBurst([platform], org, { weeklyCapMicros: Number(cap) }, {});
    expect(Object.keys(outcome.refused)).toEqual(['429 SPENDING_LIMIT_EXCEEDED']);
    expect(outcome.keySpent).toBeLessThanOrEqual(cap);
  }, 60_000);

  it("a credit share: the key spends at most 25% of the organization's credit, refusals are 402 INSUFFICIENT_CREDIT", async () => {
    const org = await createOrg(platform, 'keyshare');
    const credit = 2_800_000n;
    const outcome = await keyBurst([platform], org, { creditSharePercent: 25 }, { prepaidMicros: credit });
    expect(Object.keys(outcome.refused)).toEqual(['402 INSUFFICIENT_CREDIT']);
    expect(outcome.keySpent).toBeLessThanOrEqual(credit / 4n);
    expect(outcome.keySpent).toBeGreaterThan(credit / 4n - outcome.estimate);
  }, 60_000);
});
