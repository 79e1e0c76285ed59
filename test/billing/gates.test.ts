// Metering and the billing gates end to end, on the embedded PGlite: usage recorded for
// every organization, the prepaid credit gate (402), the weekly cap (429 1005), coding-agent
// allowances, Idempotency-Key billing once, and crash reconciliation.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { indexItem } from '../support/content.js';
import { ask, createOrg, INPUT_MICROS, OUTPUT_MICROS, pricedCatalog, settled, type TestOrg } from './support.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
});
afterAll(() => platform?.close());

const prisma = () => platform.services.database.prisma;
const billing = () => platform.services.billing;
const chat = (org: TestOrg, body: unknown, path = '/ai/v2/guarded/chat/completions', headers: Record<string, string> = {}) =>
  platform.api(path, { method: 'POST', key: org.key, headers, body: JSON.stringify(body) });

async function prepaid(label: string, usd?: bigint): Promise<TestOrg> {
  const org = await createOrg(platform, label);
  await billing().accounts.setMode(org.id, 'prepaid');
  if (usd) await billing().accounts.credit.add(org.id, usd, 'test');
  return org;
}

describe('metering', () => {
  it('records every call of an unmetered organization (the default) with tokens and catalog cost, and never gates it', async () => {
    const org = await createOrg(platform, 'unmetered');
    expect((await billing().accounts.settings(org.id)).mode).toBe('unmetered');
    const res = await chat(org, ask());
    expect(res.status).toBe(200);
    const answer = await res.json();
    await settled(platform, org.id);
    const records = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(records).toHaveLength(1);
    const [r] = records;
    expect(r).toMatchObject({ apiKeyId: org.keyId, model: 'priced', provider: 'local', operation: 'createGuardedChatCompletion' });
    expect(r.inputTokens).toBe(answer.usage.prompt_tokens);
    expect(r.outputTokens).toBe(answer.usage.completion_tokens);
    expect(r.costMicros).toBe(BigInt(r.inputTokens) * INPUT_MICROS + BigInt(r.outputTokens) * OUTPUT_MICROS);
    expect(r.billedMicros).toBe(r.costMicros);
    expect(r.traceId).toBe(res.headers.get('x-trace-id'));
    // No credit, no ledger: unmetered organizations are never charged.
    expect(await prisma().creditLedger.count({ where: { organizationId: org.id } })).toBe(0);
  });

  it('records embeddings (input tokens at the embedding model price)', async () => {
    const org = await createOrg(platform, 'embed');
    const res = await platform.api('/ai/v2/embeddings', { method: 'POST', key: org.key, body: JSON.stringify({ model: 'local-embedding', input: ['one two three', 'four'] }) });
    expect(res.status).toBe(200);
    const body = await res.json();
    await settled(platform, org.id);
    const [r] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(r).toMatchObject({ model: 'local-embedding', operation: 'createEmbeddingsAlias', inputTokens: body.usage.prompt_tokens, outputTokens: 0 });
    expect(r.costMicros).toBe(BigInt(body.usage.prompt_tokens) * 100n);
  });

  it('records the query embedding of a search (never gated: a prepaid organization with no credit still searches)', async () => {
    const org = await prepaid('search');
    const publisher = await platform.services.identity.organizations.createPublisher(org.name, `${org.name}-pub`);
    const { plaintext: key } = await platform.services.identity.keys.issue(org.id, { scopes: ['data:read'], label: 'search', expiresAt: null });
    await indexItem(platform, publisher.id, ['Sabbath rest is received before it is achieved.'], { title: 'A passage' });
    const res = await platform.api('/ai/v1/data/search', { method: 'POST', key, body: JSON.stringify({ query: 'rest and sabbath', collection: 'GlooProd', tenant: publisher.name }) });
    expect(res.status).toBe(200);
    await settled(platform, org.id);
    const [r] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(r).toMatchObject({ operation: 'searchCollection', model: 'local-embedding', outputTokens: 0 });
    expect(r.inputTokens).toBeGreaterThan(0);
    expect(await prisma().creditLedger.count({ where: { organizationId: org.id, amountMicros: { lt: 0 } } })).toBe(0);
  });

  it('bills a request repeated with the same Idempotency-Key once', async () => {
    const org = await prepaid('idem', 10_000_000n);
    const key = randomUUID();
    const first = await chat(org, ask(), undefined, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    await settled(platform, org.id);
    const again = await chat(org, ask(), undefined, { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    await settled(platform, org.id);
    expect(await prisma().usageRecord.count({ where: { organizationId: org.id } })).toBe(1);
    expect(await prisma().creditLedger.count({ where: { organizationId: org.id, amountMicros: { lt: 0 } } })).toBe(1);
  });
});

describe('refusals and the Idempotency-Key', () => {
  it('does not keep a 402 for the key: the retry after credit lands runs', async () => {
    const org = await prepaid('idem402');
    const key = randomUUID();
    expect((await chat(org, ask(), undefined, { 'idempotency-key': key })).status).toBe(402);
    await billing().accounts.credit.add(org.id, 5_000_000n, 'top-up');
    const retry = await chat(org, ask(), undefined, { 'idempotency-key': key });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('does not keep a 429 SPENDING_LIMIT_EXCEEDED for the key: the retry after the cap is raised runs', async () => {
    const org = await prepaid('idem1005', 10_000_000n);
    await billing().accounts.setWeeklyCap(org.id, 1n);
    const key = randomUUID();
    expect((await chat(org, ask(), undefined, { 'idempotency-key': key })).status).toBe(429);
    await billing().accounts.setWeeklyCap(org.id, null);
    const retry = await chat(org, ask(), undefined, { 'idempotency-key': key });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('prepaid credit', () => {
  it('refuses an empty balance with 402 INSUFFICIENT_CREDIT (not retryable) and answers as soon as credit lands', async () => {
    const org = await prepaid('empty');
    const refused = await chat(org, ask());
    expect(refused.status).toBe(402);
    const body = await refused.json();
    expect(body.error).toMatchObject({ name: 'INSUFFICIENT_CREDIT', retryable: false });
    expect(body.trace_id).toBeTruthy();
    expect(await prisma().usageRecord.count({ where: { organizationId: org.id } })).toBe(0);

    await billing().accounts.credit.add(org.id, 5_000_000n, 'top-up');
    expect((await chat(org, ask())).status).toBe(200);
  });

  it('refuses a request whose estimate the balance cannot cover, naming the estimate', async () => {
    // Estimate: ~70 prompt tokens (with the tradition instruction) × 1,000 + 40 × 2,000 ≈ 150,000 micros.
    const org = await prepaid('short', 120_000n);
    const refused = await chat(org, ask());
    expect(refused.status).toBe(402);
    expect((await refused.json()).error.message).toContain('estimate');
    // A smaller max_tokens fits.
    expect((await chat(org, ask(undefined, { max_tokens: 5 }))).status).toBe(200);
  });

  it('debits the ledger with the actual charge, keeps the counters in step, and releases the hold', async () => {
    const org = await prepaid('debit', 10_000_000n);
    const res = await chat(org, ask());
    expect(res.status).toBe(200);
    await settled(platform, org.id);
    const [usage] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    const account = await billing().accounts.account(org.id);
    expect(await billing().accounts.credit.balance(org.id)).toBe(10_000_000n - usage.billedMicros);
    expect(account.balanceMicros).toBe(10_000_000n - usage.billedMicros);
    expect(account.reservedMicros).toBe(0n);
    expect(account.weekSpentMicros).toBe(usage.billedMicros);
    const [hold] = await prisma().billingReservation.findMany({ where: { organizationId: org.id } });
    expect(hold).toMatchObject({ outcome: 'settled', model: 'priced', apiKeyId: org.keyId });
    // The hold was the worst case: prompt estimate + max_tokens at the model's price.
    expect(hold.estimateMicros).toBeGreaterThanOrEqual(usage.billedMicros);
    expect(usage.reservationId).toBe(hold.id);
  });

  it('prices auto-routing at its most expensive candidate', async () => {
    const org = await prepaid('auto', 60_000n);
    // `cheap` would cost ~150 micros, but the hold is priced at `priced` (~150,000).
    const refused = await chat(org, { auto_routing: true, max_tokens: 40, messages: [{ role: 'user', content: 'hello' }] });
    expect(refused.status).toBe(402);
  });
});

describe('weekly spending cap', () => {
  it('answers 429 SPENDING_LIMIT_EXCEEDED (1005, no Retry-After) at the cap even with credit left, and credit does not clear it', async () => {
    const org = await prepaid('cap', 10_000_000n);
    await billing().accounts.setWeeklyCap(org.id, 250_000n);
    expect((await chat(org, ask())).status).toBe(200);
    await settled(platform, org.id);
    const refused = await chat(org, ask());
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull();
    const body = await refused.json();
    expect(body.error).toMatchObject({ code: 1005, name: 'SPENDING_LIMIT_EXCEEDED', retryable: false });
    expect(body.error.message).toMatch(/resets at \d{4}-\d{2}-\d{2}T00:00:00.000Z/);

    await billing().accounts.credit.add(org.id, 50_000_000n, 'more');
    expect((await chat(org, ask())).status).toBe(429);
    // Raising the cap (an operator decision) does.
    await billing().accounts.setWeeklyCap(org.id, null);
    expect((await chat(org, ask())).status).toBe(200);
  });

  it('binds an unmetered organization too (spec 7.3.1, part 8): spend is counted, nothing is debited', async () => {
    const org = await createOrg(platform, 'capfree');
    expect((await chat(org, ask())).status).toBe(200);
    await settled(platform, org.id);
    const [first] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    // Set mid-week: what the organization spent before counts.
    await billing().accounts.setWeeklyCap(org.id, first.billedMicros + 200_000n);
    expect((await billing().accounts.account(org.id)).weekSpentMicros).toBe(first.billedMicros);
    expect((await chat(org, ask())).status).toBe(200);
    await settled(platform, org.id);
    const refused = await chat(org, ask());
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.name).toBe('SPENDING_LIMIT_EXCEEDED');
    const usage = await prisma().usageRecord.aggregate({ where: { organizationId: org.id }, _sum: { billedMicros: true } });
    expect((await billing().accounts.account(org.id)).weekSpentMicros).toBe(usage._sum.billedMicros);
    expect(await prisma().creditLedger.count({ where: { organizationId: org.id } })).toBe(0);
    // The coding route does not count against the cap.
    expect((await chat(org, ask(), '/ai/v2/code-assist/chat/completions')).status).toBe(200);
    await billing().accounts.setWeeklyCap(org.id, null);
    expect((await chat(org, ask())).status).toBe(200);
  });

  it('counts the week from Monday 00:00 UTC: last week’s spend does not count', async () => {
    const org = await prepaid('week', 10_000_000n);
    await billing().accounts.setWeeklyCap(org.id, 150_000n);
    await prisma().billingAccount.update({ where: { organizationId: org.id }, data: { weekSpentMicros: 150_000n, weekStart: new Date('2020-01-06T00:00:00Z') } });
    expect((await chat(org, ask())).status).toBe(200);
  });
});

describe('coding-agent plans', () => {
  const coding = (org: TestOrg, product = 'code-assist') => chat(org, ask(), `/ai/v2/${product}/chat/completions`);

  it('answers 402 NO_PLAN with topup_available for a prepaid organization without a plan', async () => {
    const org = await prepaid('noplan', 10_000_000n);
    const res = await coding(org);
    expect(res.status).toBe(402);
    const body = await res.json();
    expect(body.error.name).toBe('NO_PLAN');
    expect(body.topup_available).toBe(false);
  });

  it('draws on the allowance, never on API credit, and answers GC_ALLOWANCE_EXHAUSTED when spent', async () => {
    const org = await prepaid('plan', 10_000_000n);
    await billing().accounts.setCodingPlan(org.id, 'code-assist', { allowanceMicros: 250_000n, topupAvailable: true });
    expect((await coding(org)).status).toBe(200);
    await settled(platform, org.id);
    const plan = await prisma().codingPlan.findFirstOrThrow({ where: { organizationId: org.id } });
    const [usage] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(usage.product).toBe('code-assist');
    expect(plan.usedMicros).toBe(usage.billedMicros);
    expect(plan.reservedMicros).toBe(0n);
    // API credit untouched.
    expect(await billing().accounts.credit.balance(org.id)).toBe(10_000_000n);

    const spent = await coding(org);
    expect(spent.status).toBe(402);
    const body = await spent.json();
    expect(body.error.name).toBe('GC_ALLOWANCE_EXHAUSTED');
    expect(body.topup_available).toBe(true);
    // Another product has no plan; API credit still serves the API.
    expect((await coding(org, 'other-product')).status).toBe(402);
    expect((await chat(org, ask())).status).toBe(200);
  });

  it('does not let a plan pay for API requests: an empty balance is 402 whatever the allowance', async () => {
    const org = await prepaid('planonly');
    await billing().accounts.setCodingPlan(org.id, 'code-assist', { allowanceMicros: 10_000_000n, topupAvailable: false });
    expect((await chat(org, ask())).status).toBe(402);
    expect((await coding(org)).status).toBe(200);
  });

  it('leaves the coding route open for unmetered organizations (out of the box)', async () => {
    const org = await createOrg(platform, 'codefree');
    expect((await coding(org)).status).toBe(200);
  });
});

describe('reserve then settle', () => {
  it('releases holds a crashed instance left open, without charging them', async () => {
    const org = await prepaid('crash', 1_000_000n);
    const hold = await billing().reservations.reserve({ organizationId: org.id, apiKeyId: null, operation: 'createGuardedChatCompletion', model: 'priced', product: null, estimateMicros: 900_000n, traceId: 'trc_crash', debit: true, limitedKey: false });
    // The hold blocks what it covers...
    expect((await chat(org, ask())).status).toBe(402);
    expect(await billing().reservations.reconcile(0)).toBeGreaterThanOrEqual(1);
    const row = await prisma().billingReservation.findUniqueOrThrow({ where: { id: hold.id } });
    expect(row.outcome).toBe('released');
    expect((await billing().accounts.account(org.id)).reservedMicros).toBe(0n);
    expect(await billing().accounts.credit.balance(org.id)).toBe(1_000_000n);
    // ...and a late settle of a released hold does not release it twice.
    await billing().reservations.settle({ organizationId: org.id, apiKeyId: null, operation: 'x', traceId: 'trc_crash', product: null, charge: true, reservation: hold, calls: [] });
    expect((await billing().accounts.account(org.id)).reservedMicros).toBe(0n);
    expect((await chat(org, ask())).status).toBe(200);
  });
});

describe('the deprecated Chat API (POST /ai/v1/message): each message is a metered model call', () => {
  const message = (org: TestOrg) => platform.api('/ai/v1/message', { method: 'POST', key: org.key, body: JSON.stringify({ query: 'What is rest?', character_limit: 300 }) });

  it('is gated for prepaid organizations: 402 on an empty balance, in the Chat API’s detail shape', async () => {
    const org = await prepaid('chatapi');
    const refused = await message(org);
    expect(refused.status).toBe(402);
    const body = await refused.json();
    expect(body.detail).toContain('balance');
    expect(body.trace_id).toBe(refused.headers.get('x-trace-id'));
    expect(await prisma().usageRecord.count({ where: { organizationId: org.id } })).toBe(0);

    await billing().accounts.credit.add(org.id, 10_000_000n, 'top-up');
    expect((await message(org)).status).toBe(200);
    await settled(platform, org.id);
    const [usage] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(usage.operation).toBe('sendChatMessage');
    expect(await billing().accounts.credit.balance(org.id)).toBe(10_000_000n - usage.billedMicros);
  });

  it('counts against the weekly cap (429 SPENDING_LIMIT_EXCEEDED, no Retry-After)', async () => {
    const org = await prepaid('chatcap', 10_000_000n);
    await billing().accounts.setWeeklyCap(org.id, 1n);
    const refused = await message(org);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect((await refused.json()).detail).toContain('weekly spending cap');
  });

  it('is rate-limited (429 QUOTA_EXCEEDED with Retry-After)', async () => {
    const org = await createOrg(platform, 'chatrl');
    await platform.services.limits.quotas.set(org.id, null, { requestsPerMinute: 1, tokensPerMinute: null });
    expect((await message(org)).status).toBe(200);
    const refused = await message(org);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('1');
  });
});

describe('image generation', () => {
  it('bills each drawn image at the model’s per-image price, and holds one in the estimate', async () => {
    const artist = await startTestPlatform(
      { logLevel: 'silent' },
      {
        catalog: pricedCatalog({
          models: [{ id: 'artist', family: 'local', context_window: 32_768, max_output_tokens: 4_096, capabilities: { tools: true, image_generation: true }, pricing: { input_per_1m: 1, output_per_1m: 2, per_image: 0.5 }, deployments: ['local-chat'] }],
        }),
      },
    );
    try {
      const org = await createOrg(artist, 'artist');
      await artist.services.billing.accounts.setMode(org.id, 'prepaid');
      const draw = () =>
        artist.api('/ai/v2/responses', {
          method: 'POST',
          key: org.key,
          body: JSON.stringify({ model: 'artist', max_output_tokens: 50, input: 'Draw a lighthouse.', tools: [{ type: 'image_generation' }], tool_choice: { type: 'image_generation' } }),
        });
      // $0.40 covers the tokens but not the image ($0.50).
      await artist.services.billing.accounts.addCredit(org.id, 400_000n, 'test');
      expect((await draw()).status).toBe(402);
      await artist.services.billing.accounts.addCredit(org.id, 1_000_000n, 'test');
      const res = await draw();
      expect(res.status).toBe(200);
      expect((await res.json()).output.some((item: { type: string }) => item.type === 'image_generation_call')).toBe(true);
      await settled(artist, org.id);
      const rows = await artist.services.database.prisma.usageRecord.findMany({ where: { organizationId: org.id } });
      const image = rows.find((r) => r.images === 1)!;
      expect(image).toMatchObject({ inputTokens: 0, outputTokens: 0, costMicros: 500_000n, billedMicros: 500_000n });
      const billed = rows.reduce((sum, r) => sum + r.billedMicros, 0n);
      expect(await artist.services.billing.accounts.credit.balance(org.id)).toBe(1_400_000n - billed);
    } finally {
      await artist.close();
    }
  }, 120_000); // starts a platform of its own
});
