// X-Should-Retry on every error answer, from the error catalog: the official `openai` npm
// client retries every 408, 409, 429 and 5xx unless the header says otherwise, so a weekly
// cap (429 SPENDING_LIMIT_EXCEEDED, 1005) must say `false` or it is asked again and again.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog, type TestOrg } from './support.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
});
afterAll(() => platform?.close());

async function capped(): Promise<TestOrg> {
  const org = await createOrg(platform, 'retry');
  await platform.services.billing.accounts.setMode(org.id, 'prepaid');
  await platform.services.billing.accounts.addCredit(org.id, 10_000_000n, 'test');
  await platform.services.billing.accounts.setWeeklyCap(org.id, 1n);
  return org;
}

describe('X-Should-Retry', () => {
  it('the openai client does not retry a 429 SPENDING_LIMIT_EXCEEDED', async () => {
    const org = await capped();
    let calls = 0;
    const client = new OpenAI({
      baseURL: `${platform.apiUrl}/ai/v2`,
      apiKey: org.key,
      maxRetries: 3,
      fetch: (url, init) => (calls++, fetch(url, init)),
    });
    const error = await client.chat.completions.create(ask() as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('x-should-retry')).toBe('false');
    expect(calls).toBe(1);
  });

  it('says true where the catalog says retryable, false where not', async () => {
    const org = await createOrg(platform, 'quota');
    await platform.services.limits.quotas.set(org.id, null, { requestsPerMinute: 0, tokensPerMinute: null });
    const post = (key: string, body: unknown = ask()) => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key, body: JSON.stringify(body) });
    const quota = await post(org.key);
    expect([quota.status, quota.headers.get('x-should-retry')]).toEqual([429, 'true']);
    const invalid = await post(platform.adminKey, { messages: [{ role: 'user', content: 'hi' }] });
    expect([invalid.status, invalid.headers.get('x-should-retry')]).toEqual([400, 'false']);
    const unauthorized = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: null, body: JSON.stringify(ask()) });
    expect([unauthorized.status, unauthorized.headers.get('x-should-retry')]).toEqual([401, 'false']);
    // Answered before anything else runs: a management error too.
    const missing = await platform.mgmt('/api/v1/agents/00000000-0000-4000-8000-000000000000');
    expect([missing.status, missing.headers.get('x-should-retry')]).toEqual([404, 'false']);
  });
});
