// The SDK against the real server's billing and limit refusals: each surfaces as its typed
// error with the facts a caller acts on (retryable, Retry-After, X-RateLimit-*,
// topup_available, trace id), and the non-retryable ones are not retried.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APIError,
  GcAllowanceExhaustedError,
  InsufficientCreditError,
  NoPlanError,
  PaymentRequiredError,
  Platform,
  QuotaExceededError,
  RateLimitError,
  SpendingLimitExceededError,
  type RetryEvent,
} from '../../sdk/src/index.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { createOrg, pricedCatalog, type TestOrg } from '../billing/support.js';

const TRACE = /^trc_[0-9a-f]{32}$/;
const body = { model: 'priced', max_tokens: 40, messages: [{ role: 'user' as const, content: 'Say something about rivers.' }] };

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
});
afterAll(() => platform?.close());

const retries: RetryEvent[] = [];
function sdkFor(org: TestOrg, maxRetries?: number): Platform {
  return new Platform({
    apiKey: org.key,
    baseUrl: platform.apiUrl,
    managementBaseUrl: platform.mgmtUrl,
    logger: { warn: () => undefined },
    onRetry: (event) => retries.push(event),
    retry: { initialDelayMs: 10 },
    ...(maxRetries === undefined ? {} : { maxRetries }),
  });
}

async function rejection(call: () => Promise<unknown>): Promise<APIError> {
  const outcome = await call().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  if (outcome.ok) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value).slice(0, 300)}`);
  expect(outcome.error).toBeInstanceOf(APIError);
  return outcome.error as APIError;
}

async function prepaid(label: string, credit = 0n): Promise<TestOrg> {
  const org = await createOrg(platform, label);
  await platform.services.billing.accounts.setMode(org.id, 'prepaid');
  if (credit > 0n) await platform.services.billing.accounts.credit.add(org.id, credit, 'test');
  return org;
}

describe('billing refusals through the SDK', () => {
  it('402 INSUFFICIENT_CREDIT: InsufficientCreditError, not retryable, not retried', async () => {
    const org = await prepaid('sdk-credit');
    const before = retries.length;
    const error = await rejection(() => sdkFor(org).chat.completions.create(body));
    expect(error).toBeInstanceOf(InsufficientCreditError);
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(error).toMatchObject({ status: 402, name: 'INSUFFICIENT_CREDIT', code: 1006, retryable: false, category: 'client' });
    expect(error.traceId).toMatch(TRACE);
    expect(error.retryAfterMs).toBeUndefined();
    expect(retries.length).toBe(before);
  });

  it('429 SPENDING_LIMIT_EXCEEDED: SpendingLimitExceededError without Retry-After, not retried', async () => {
    const org = await prepaid('sdk-cap', 10_000_000n);
    await platform.services.billing.accounts.setWeeklyCap(org.id, 1n);
    const before = retries.length;
    const error = await rejection(() => sdkFor(org).chat.completions.create(body));
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, name: 'SPENDING_LIMIT_EXCEEDED', code: 1005, retryable: false });
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.headers.get('retry-after')).toBeNull();
    expect(error.traceId).toMatch(TRACE);
    expect(retries.length).toBe(before);
  });

  it('429 QUOTA_EXCEEDED: QuotaExceededError, retryable, with Retry-After and the X-RateLimit-* facts', async () => {
    const org = await createOrg(platform, 'sdk-quota');
    await platform.services.limits.quotas.set(org.id, null, { requestsPerMinute: 1, tokensPerMinute: null });
    const sdk = sdkFor(org, 0);
    await sdk.chat.completions.create(body);
    const error = await rejection(() => sdk.chat.completions.create(body));
    expect(error).toBeInstanceOf(QuotaExceededError);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, name: 'QUOTA_EXCEEDED', code: 1019, retryable: true });
    expect(error.retryAfterMs).toBeGreaterThanOrEqual(1_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(error.rateLimit).toMatchObject({ limit: 1, remaining: 0 });
    expect(error.rateLimit?.resetSeconds).toBeGreaterThanOrEqual(error.retryAfterMs! / 1000);
    expect(error.traceId).toMatch(TRACE);
  });

  it('402 NO_PLAN on the coding route: NoPlanError with topupAvailable false', async () => {
    const org = await prepaid('sdk-noplan', 10_000_000n);
    const error = await rejection(() => sdkFor(org).coding.chat.completions.create('code-assist', body));
    expect(error).toBeInstanceOf(NoPlanError);
    expect(error).toMatchObject({ status: 402, name: 'NO_PLAN', code: 1008, retryable: false, topupAvailable: false });
    expect(error.traceId).toMatch(TRACE);
  });

  it('402 GC_ALLOWANCE_EXHAUSTED on the coding route: GcAllowanceExhaustedError with topupAvailable as the plan says', async () => {
    const org = await prepaid('sdk-allowance', 10_000_000n);
    await platform.services.billing.accounts.setCodingPlan(org.id, 'code-assist', { allowanceMicros: 1n, topupAvailable: true });
    const error = await rejection(() => sdkFor(org).coding.chat.completions.create('code-assist', body));
    expect(error).toBeInstanceOf(GcAllowanceExhaustedError);
    expect(error).toMatchObject({ status: 402, name: 'GC_ALLOWANCE_EXHAUSTED', code: 1007, retryable: false, topupAvailable: true });
    expect(error.traceId).toMatch(TRACE);
  });
});
