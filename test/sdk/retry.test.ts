// Spec 7.3, rule by rule, against a scripted fault server over real HTTP. Fake timers
// (setTimeout + Date) make the backoff observable: each test counts the attempts the
// server saw and the (fake) time between them, so each fails without the rule it names.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  ContentFilteredError,
  ConflictError,
  GcAllowanceExhaustedError,
  IdempotencyKeyInUseError,
  InsufficientCreditError,
  NotFoundError,
  PaymentRequiredError,
  Platform,
  ProviderAuthError,
  ProviderInferenceError,
  ProviderTimeoutError,
  ProviderUnavailableError,
  QuotaExceededError,
  RateLimitError,
  RequestTimeoutError,
  ServiceUnavailableError,
  SpendingLimitExceededError,
  type PlatformOptions,
} from '../../sdk/src/index.js';
import { aiError, startFaultServer, type FaultServer } from './support/fault-server.js';
import { chat, drive, gaps, settleIo, until } from './support/helpers.js';

const CHAT = 'POST /ai/v2/guarded/chat/completions';
const CODING = 'POST /ai/v2/code-assist/chat/completions';
const HEALTH = 'GET /api/v1/health';
const completion = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

let server: FaultServer;
beforeAll(async () => {
  server = await startFaultServer();
});
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.spyOn(Math, 'random').mockReturnValue(0);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const client = (options: PlatformOptions = {}) => new Platform({ apiKey: 'sk_test', baseUrl: server.url, managementBaseUrl: server.url, ...options });
const attemptTimes = (route: string) => server.requestsTo(route).map((r) => r.at);

describe('retryable answers: 408 and retryable 5xx, 2^n backoff plus jitter, at most 5 attempts', () => {
  it('retries a retryable 503 with 1, 2, 4, 8 s waits and gives up after 5 attempts', async () => {
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) });
    const { error, retries } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(5);
    expect(gaps(attemptTimes(CHAT))).toEqual([1000, 2000, 4000, 8000]);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2, 3, 4]);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ status: 503, code: 2002, name: 'PROVIDER_UNAVAILABLE', retryable: true, category: 'provider' });
  });

  it('does not send the retry before its backoff has elapsed', async () => {
    server.script(CHAT, { status: 500, body: aiError('PROVIDER_INFERENCE_ERROR', 2013, true) }, { status: 200, body: completion });
    const retries: unknown[] = [];
    const call = client({ onRetry: (e) => retries.push(e) }).createGuardedChatCompletion({ body: chat });
    await until(() => retries.length === 1);
    await vi.advanceTimersByTimeAsync(999);
    await settleIo();
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(call).resolves.toMatchObject({ id: 'chatcmpl-1' });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it('adds jitter on top of 2^n (never below it, at most +25 %)', async () => {
    vi.mocked(Math.random).mockReturnValue(0.5);
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) }, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toMatchObject({ id: 'chatcmpl-1' });
    expect(gaps(attemptTimes(CHAT))).toEqual([1125, 2250]);
  });

  it('retries a 408 PROVIDER_TIMEOUT and reports it as ProviderTimeoutError when attempts run out', async () => {
    server.script(CHAT, { status: 408, body: aiError('PROVIDER_TIMEOUT', 2001, true) });
    const { error } = await drive((onRetry) => client({ onRetry, maxRetries: 2 }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(3);
    expect(error).toBeInstanceOf(ProviderTimeoutError);
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as ProviderTimeoutError).traceId).toBe('trc_body0000000000000000000000000001');
  });

  it('retries a 408 with no body by its status', async () => {
    server.script(CHAT, { status: 408 }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toMatchObject({ id: 'chatcmpl-1' });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it('recovers when a retryable 500 is followed by a success', async () => {
    server.script(CHAT, { status: 500, body: aiError('PROVIDER_INFERENCE_ERROR', 2013, true) }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toMatchObject({ id: 'chatcmpl-1' });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it('does not retry a 500 whose body says retryable: false', async () => {
    server.script(CHAT, { status: 500, body: aiError('PROVIDER_AUTH_ERROR', 2006, false) }, { status: 200, body: completion });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(ProviderAuthError);
    expect(error).toMatchObject({ status: 500, retryable: false });
  });

  it('does not retry a 503 whose body says retryable: false', async () => {
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, false) });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toMatchObject({ retryable: false, name: 'PROVIDER_UNAVAILABLE' });
  });

  it('retries a 503 without an AI body (detail string) by its status', async () => {
    server.script('GET /engine/v2/items/abc', { status: 503, body: { detail: 'Service temporarily unavailable', trace_id: 'trc_x' } }, { status: 200, body: { item_id: 'abc' } });
    const { result } = await drive((onRetry) => client({ onRetry }).getItem({ path: { item_id: 'abc' } }));
    expect(result).toMatchObject({ item_id: 'abc' });
    expect(server.requestsTo('GET /engine/v2/items/abc')).toHaveLength(2);
  });

  it('honours a per-request maxRetries', async () => {
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) });
    const { error } = await drive((onRetry) => client().createGuardedChatCompletion({ body: chat }, { maxRetries: 0, onRetry }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
  });
});

describe('429: Retry-After honoured when present, X-RateLimit-* read', () => {
  it('waits exactly Retry-After seconds instead of the backoff', async () => {
    server.script(CHAT, { status: 429, headers: { 'retry-after': '7' }, body: aiError('QUOTA_EXCEEDED', 1019, true, 'client') }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toMatchObject({ id: 'chatcmpl-1' });
    expect(gaps(attemptTimes(CHAT))).toEqual([7000]);
  });

  it('reads Retry-After as an HTTP date', async () => {
    const date = new Date(Math.ceil((Date.now() + 5000) / 1000) * 1000);
    const expected = date.getTime() - Date.now();
    server.script(CHAT, { status: 429, headers: { 'retry-after': date.toUTCString() }, body: aiError('QUOTA_EXCEEDED', 1019, true, 'client') }, { status: 200, body: completion });
    const { retries } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(retries[0]!.delayMs).toBe(expected);
    expect(gaps(attemptTimes(CHAT))).toEqual([expected]);
  });

  it('backs off 2^n when a retryable 429 has no Retry-After', async () => {
    server.script(CHAT, { status: 429, body: aiError('RATE_LIMIT', 2004, true) }, { status: 429, body: aiError('RATE_LIMIT', 2004, true) }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toBeDefined();
    expect(gaps(attemptTimes(CHAT))).toEqual([1000, 2000]);
  });

  it('waits X-RateLimit-Reset seconds when the window is exhausted and no Retry-After is sent', async () => {
    const headers = { 'x-ratelimit-limit': '600', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '5' };
    server.script(CHAT, { status: 429, headers, body: aiError('QUOTA_EXCEEDED', 1019, true, 'client') }, { status: 200, body: completion });
    const { retries } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(gaps(attemptTimes(CHAT))).toEqual([5000]);
    expect((retries[0]!.error as RateLimitError).rateLimit).toEqual({ limit: 600, remaining: 0, resetSeconds: 5 });
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs: throws at once with retryAfterMs', async () => {
    server.script(CHAT, { status: 429, headers: { 'retry-after': '3600' }, body: aiError('QUOTA_EXCEEDED', 1019, true, 'client') });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(QuotaExceededError);
    expect((error as QuotaExceededError).retryAfterMs).toBe(3_600_000);
  });

  it('retries a bare 429 (no body) by its status', async () => {
    server.script(CHAT, { status: 429, headers: { 'retry-after': '1' } }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toBeDefined();
    expect(gaps(attemptTimes(CHAT))).toEqual([1000]);
  });
});

describe('never retried', () => {
  it('SPENDING_LIMIT_EXCEEDED (429 / 1005), even with a Retry-After and a body claiming retryable', async () => {
    server.script(CHAT, {
      status: 429,
      headers: { 'retry-after': '1' },
      body: aiError('SPENDING_LIMIT_EXCEEDED', 1005, true, 'client'),
    });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 1005, name: 'SPENDING_LIMIT_EXCEEDED' });
  });

  it('the contract 1005 body (retryable false, no Retry-After)', async () => {
    server.script(CHAT, { status: 429, body: aiError('SPENDING_LIMIT_EXCEEDED', 1005, false, 'client') });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toMatchObject({ retryable: false, retryAfterMs: undefined });
  });

  it('INSUFFICIENT_CREDIT (402)', async () => {
    server.script(CHAT, { status: 402, body: aiError('INSUFFICIENT_CREDIT', 1006, false, 'client') });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(InsufficientCreditError);
    expect(error).toBeInstanceOf(PaymentRequiredError);
  });

  it('GC_ALLOWANCE_EXHAUSTED (402 of the coding route) with topup_available', async () => {
    server.script(CODING, { status: 402, body: aiError('GC_ALLOWANCE_EXHAUSTED', 1007, false, 'client', { topup_available: true }) });
    const { error } = await drive((onRetry) =>
      client({ onRetry }).createCodingChatCompletion({ path: { coding_product: 'code-assist' }, body: chat }),
    );
    expect(server.requestsTo(CODING)).toHaveLength(1);
    expect(error).toBeInstanceOf(GcAllowanceExhaustedError);
    expect(error).toMatchObject({ status: 402, topupAvailable: true });
  });

  it('CONTENT_FILTERED (422)', async () => {
    server.script(CHAT, { status: 422, body: aiError('CONTENT_FILTERED', 1018, false, 'client') });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(ContentFilteredError);
  });

  it('other 4xx: 400, 401, 404, even when the body claims retryable', async () => {
    server.script(CHAT, { status: 400, body: aiError('ROUTING_SELECTOR_INVALID', 1001, true, 'client') });
    server.script(HEALTH, { status: 401, body: { error: { code: 'unauthorized', message: 'Missing or invalid API key.' }, meta: { requestId: 'r' }, trace_id: 'trc_m' } });
    server.script('GET /engine/v1/files/f', { status: 404, body: { detail: 'Item not found', trace_id: 'trc_d' } });
    const c = client();
    const outcomes = [
      await drive((onRetry) => c.createGuardedChatCompletion({ body: chat }, { onRetry })),
      await drive((onRetry) => c.getHealth(undefined, { onRetry })),
      await drive((onRetry) => c.getFile({ path: { item_id: 'f' } }, { onRetry })),
    ];
    expect(server.requests).toHaveLength(3);
    expect(outcomes.map((o) => o.retries.length)).toEqual([0, 0, 0]);
    expect(outcomes[0]!.error).toBeInstanceOf(BadRequestError);
    expect(outcomes[1]!.error).toBeInstanceOf(AuthenticationError);
    expect(outcomes[2]!.error).toBeInstanceOf(NotFoundError);
  });
});

describe('connection errors, idempotency keys and timeouts', () => {
  it('retries a dropped connection of a GET', async () => {
    server.script(HEALTH, { drop: true }, { status: 200, body: { data: { status: 'healthy', gateways: [] }, meta: { requestId: 'r' } } });
    const { result, retries } = await drive((onRetry) => client({ onRetry }).getHealth());
    expect(result).toMatchObject({ data: { status: 'healthy' } });
    expect(retries[0]!.error).toBeInstanceOf(APIConnectionError);
    expect(gaps(attemptTimes(HEALTH))).toEqual([1000]);
  });

  it('sends one idempotency key on a creating POST and reuses it on every retry after a dropped connection', async () => {
    server.script('POST /api/v1/agents', { drop: true }, { drop: true }, { status: 201, body: { data: { id: 'agt_1' }, meta: { requestId: 'r' } } });
    const { result } = await drive((onRetry) => client({ onRetry }).createAgent({ body: { name: 'A' } }));
    expect(result).toMatchObject({ data: { id: 'agt_1' } });
    const keys = server.requestsTo('POST /api/v1/agents').map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(keys[0]).toMatch(/^idem_[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
  });

  it('uses a fresh key per call, and the caller-given key when there is one', async () => {
    server.script('POST /api/v1/agents', { status: 201, body: { data: { id: 'agt_1' }, meta: { requestId: 'r' } } });
    const c = client();
    await c.createAgent({ body: { name: 'A' } });
    await c.createAgent({ body: { name: 'B' } });
    await c.createAgent({ body: { name: 'C' } }, { idempotencyKey: 'my-key' });
    const keys = server.requestsTo('POST /api/v1/agents').map((r) => r.headers['idempotency-key']);
    expect(keys[0]).not.toBe(keys[1]);
    expect(keys[2]).toBe('my-key');
  });

  it('does not retry a dropped connection of a request that is not idempotent (PATCH without a key)', async () => {
    server.script('PATCH /engine/v2/item', { drop: true }, { status: 200, body: { success: true, message: 'ok' } });
    const { error } = await drive((onRetry) => client({ onRetry }).patchItem({ body: { publisher_id: 'p', item_id: 'i' } }));
    expect(server.requestsTo('PATCH /engine/v2/item')).toHaveLength(1);
    expect(server.requestsTo('PATCH /engine/v2/item')[0]!.headers['idempotency-key']).toBeUndefined();
    expect(error).toBeInstanceOf(APIConnectionError);
  });

  it('retries that PATCH when the caller gives it an idempotency key', async () => {
    server.script('PATCH /engine/v2/item', { drop: true }, { status: 200, body: { success: true, message: 'ok' } });
    const { result } = await drive((onRetry) => client({ onRetry }).patchItem({ body: { publisher_id: 'p', item_id: 'i' } }, { idempotencyKey: 'k1' }));
    expect(result).toMatchObject({ success: true });
    expect(server.requestsTo('PATCH /engine/v2/item')).toHaveLength(2);
  });

  it('times out a slow answer after the timeout, then retries it (idempotent)', async () => {
    server.script(HEALTH, { status: 200, delayMs: 60_000, body: {} }, { status: 200, body: { data: { status: 'healthy', gateways: [] }, meta: { requestId: 'r' } } });
    const retries: Array<{ error: unknown; delayMs: number }> = [];
    const call = client({ timeout: 5000, onRetry: (e) => retries.push(e) }).getHealth();
    await until(() => server.requestsTo(HEALTH).length === 1);
    await vi.advanceTimersByTimeAsync(4999);
    await settleIo();
    expect(retries).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await until(() => retries.length === 1);
    expect(retries[0]!.error).toBeInstanceOf(APIConnectionTimeoutError);
    await vi.advanceTimersByTimeAsync(retries[0]!.delayMs);
    await expect(call).resolves.toMatchObject({ data: { status: 'healthy' } });
  });

  it('applies a per-request timeout and throws APIConnectionTimeoutError when attempts run out', async () => {
    server.script(HEALTH, { status: 200, delayMs: 60_000, body: {} });
    const retries: Array<{ delayMs: number }> = [];
    let error: unknown;
    const call = client({ timeout: 100_000 })
      .getHealth(undefined, { timeout: 2000, maxRetries: 1, onRetry: (e) => retries.push(e) })
      .catch((e) => (error = e));
    await until(() => server.requestsTo(HEALTH).length === 1);
    await vi.advanceTimersByTimeAsync(2000);
    await until(() => retries.length === 1);
    await vi.advanceTimersByTimeAsync(retries[0]!.delayMs);
    await until(() => server.requestsTo(HEALTH).length === 2);
    await vi.advanceTimersByTimeAsync(2000);
    await call;
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    expect(gaps(attemptTimes(HEALTH))).toEqual([2000 + 1000]);
  });

  it("treats a fetch failure with no reason (a browser's TypeError: Failed to fetch) as a connection failure: fast, idempotent requests only", async () => {
    const failedToFetch = async () => {
      throw new TypeError('Failed to fetch');
    };
    const get = await drive((onRetry) => client({ onRetry, fetch: failedToFetch }).getHealth());
    expect(get.retries.map((r) => r.delayMs)).toEqual([100, 200]); // not 1, 2, 4, 8 s
    expect(get.error).toBeInstanceOf(APIConnectionError);
    expect((get.error as APIConnectionError).reasonUnknown).toBe(true);
    expect((get.error as Error).message).toContain(`Could not reach ${server.url}/api/v1/health (Failed to fetch)`);
    expect((get.error as Error).message).toContain('gave up after 3 attempts');

    // A streaming POST may have reached the server: never sent again.
    const stream = await drive((onRetry) => client({ onRetry, fetch: failedToFetch }).createGuardedChatCompletion({ body: { ...chat, stream: true } }));
    expect(stream.retries).toHaveLength(0);
    expect(stream.error).toBeInstanceOf(APIConnectionError);
  });

  it('stops at once when the caller aborts during a backoff wait', async () => {
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) });
    const controller = new AbortController();
    const retries: unknown[] = [];
    let error: unknown;
    const call = client({ onRetry: (e) => retries.push(e) })
      .createGuardedChatCompletion({ body: chat }, { signal: controller.signal })
      .catch((e) => (error = e));
    await until(() => retries.length === 1);
    controller.abort();
    await call;
    expect(error).toBeInstanceOf(APIUserAbortError);
    await vi.advanceTimersByTimeAsync(60_000);
    await settleIo();
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });
});

describe('streams: a lower ceiling, and only before the first event', () => {
  it('retries a stream request that fails before streaming at most 3 times in all', async () => {
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) });
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: { ...chat, stream: true } }));
    expect(server.requestsTo(CHAT)).toHaveLength(3);
    expect(gaps(attemptTimes(CHAT))).toEqual([1000, 2000]);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
  });

  it('honours maxStreamRetries', async () => {
    server.script(CHAT, { status: 500, body: aiError('PROVIDER_INFERENCE_ERROR', 2013, true) });
    const { error } = await drive((onRetry) => client({ onRetry, maxStreamRetries: 0 }).createGuardedChatCompletion({ body: { ...chat, stream: true } }));
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(ProviderInferenceError);
  });

  it('caps maxStreamRetries by maxRetries, also in a client derived with withOptions()', async () => {
    const attempts = async (platform: Platform) => {
      server.reset();
      server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) });
      const { error } = await drive((onRetry) => platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { onRetry }));
      expect(error).toBeInstanceOf(ProviderUnavailableError);
      return server.requestsTo(CHAT).length;
    };
    expect(await attempts(client({ maxRetries: 0, maxStreamRetries: 2 }))).toBe(1);
    expect(await attempts(client({ maxRetries: 1, maxStreamRetries: 2 }))).toBe(2);
    const parent = client({ maxStreamRetries: 2 });
    expect(await attempts(parent)).toBe(3);
    expect(await attempts(parent.withOptions({ maxRetries: 0 }))).toBe(1);
    expect(await attempts(client().withOptions({ maxRetries: 0 }))).toBe(1);
  });

  it('does not retry an error event after the stream started', async () => {
    server.script(CHAT, {
      sse: [
        { data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] } },
        { data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'error' }], error: aiError('PROVIDER_INFERENCE_ERROR', 2013, true).error, trace_id: 'trc_stream' } },
      ],
    });
    const { result: stream, retries } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: { ...chat, stream: true } }));
    await expect(stream!.collect()).rejects.toMatchObject({ name: 'PROVIDER_INFERENCE_ERROR', retryable: true, inStream: true, traceId: 'trc_stream' });
    expect(retries).toHaveLength(0);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });
});

describe('streaming POSTs are not idempotent (the server does not store streamed answers)', () => {
  const streamed = { sse: [{ data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'stop' }] } }, { data: '[DONE]' }] };

  it('sends a dropped streaming POST exactly once, although it carries an idempotency key', async () => {
    server.script(CHAT, { drop: true }, streamed);
    const { error, retries } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: { ...chat, stream: true } }));
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(retries).toHaveLength(0);
    await settleIo();
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(server.requestsTo(CHAT)[0]!.headers['idempotency-key']).toMatch(/^idem_/);
  });

  it('does not resend a streaming POST with a caller-given key either', async () => {
    server.script(CHAT, { drop: true }, streamed);
    const { error } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: { ...chat, stream: true } }, { idempotencyKey: 'stream-key' }));
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it('does not resend a streaming POST that timed out before its headers', async () => {
    server.script(CHAT, { ...streamed, delayMs: 60_000 }, streamed);
    const retries: unknown[] = [];
    let error: unknown;
    const call = client({ timeout: 5000, onRetry: (e) => retries.push(e) })
      .createGuardedChatCompletion({ body: { ...chat, stream: true } })
      .catch((e: unknown) => (error = e));
    await until(() => server.requestsTo(CHAT).length === 1);
    await vi.advanceTimersByTimeAsync(5000);
    await call;
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    await vi.advanceTimersByTimeAsync(60_000);
    await settleIo();
    expect(retries).toHaveLength(0);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it('still retries a 429 answered before the stream started, within the stream ceiling', async () => {
    server.script(CHAT, { status: 429, body: aiError('RATE_LIMIT', 2004, true) }, streamed);
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: { ...chat, stream: true } }));
    await expect(result!.finalText()).resolves.toBe('Hi');
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it('still retries a non-streaming POST dropped the same way (its key replays the answer)', async () => {
    server.script(CHAT, { drop: true }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toMatchObject({ id: 'chatcmpl-1' });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });
});

describe('409 IDEMPOTENCY_KEY_IN_USE: the first request with the key is still running', () => {
  const inUse = { status: 409, body: { error: { code: 'idempotency_key_in_use', message: 'A request with this Idempotency-Key is still running' }, meta: { requestId: 'r' }, trace_id: 'trc_m' } };

  it('is retried with 2^n backoff and the same key until the stored answer comes back', async () => {
    server.script('POST /api/v1/agents', inUse, inUse, { status: 201, headers: { 'idempotent-replayed': 'true' }, body: { data: { id: 'agt_1' }, meta: { requestId: 'r' } } });
    const { result, retries } = await drive((onRetry) => client({ onRetry }).createAgent({ body: { name: 'A' } }));
    expect(result).toMatchObject({ data: { id: 'agt_1' } });
    expect(retries[0]!.error).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(retries[0]!.error).toBeInstanceOf(ConflictError);
    expect(retries[0]!.error).toMatchObject({ status: 409, name: 'IDEMPOTENCY_KEY_IN_USE', retryable: true });
    expect(gaps(attemptTimes('POST /api/v1/agents'))).toEqual([1000, 2000]);
    expect(new Set(server.requestsTo('POST /api/v1/agents').map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('the AI body shape (numeric code and name) is retried too, honouring Retry-After', async () => {
    server.script(CHAT, { status: 409, headers: { 'retry-after': '3' }, body: aiError('IDEMPOTENCY_KEY_IN_USE', 1021, true, 'client') }, { status: 200, body: completion });
    const { result } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(result).toMatchObject({ id: 'chatcmpl-1' });
    expect(gaps(attemptTimes(CHAT))).toEqual([3000]);
  });

  it('gives up with IdempotencyKeyInUseError after the usual attempts', async () => {
    server.script('POST /api/v1/agents', inUse);
    const { error } = await drive((onRetry) => client({ onRetry, maxRetries: 2 }).createAgent({ body: { name: 'A' } }));
    expect(error).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(server.requestsTo('POST /api/v1/agents')).toHaveLength(3);
  });

  it('any other 409 is not retried', async () => {
    server.script('POST /api/v1/agents', { status: 409, body: { error: { code: 'conflict', message: 'name taken' }, meta: { requestId: 'r' } } });
    const { error } = await drive((onRetry) => client({ onRetry }).createAgent({ body: { name: 'A' } }));
    expect(error).toBeInstanceOf(ConflictError);
    expect(server.requestsTo('POST /api/v1/agents')).toHaveLength(1);
  });
});

describe('numeric-only error codes', () => {
  it('a 429 {error:{code:1005}} without a name is SPENDING_LIMIT_EXCEEDED, never retried', async () => {
    server.script(CHAT, { status: 429, headers: { 'retry-after': '1' }, body: { error: { code: 1005 } } }, { status: 200, body: completion });
    const { error, retries } = await drive((onRetry) => client({ onRetry }).createGuardedChatCompletion({ body: chat }));
    expect(retries).toHaveLength(0);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
    expect(error).toMatchObject({ status: 429, code: 1005, name: 'SPENDING_LIMIT_EXCEEDED', retryable: false, category: 'client' });
  });
});

describe('backoff cap', () => {
  it('never waits longer than maxDelayMs (plus jitter) between attempts', async () => {
    vi.mocked(Math.random).mockReturnValue(0.5);
    server.script(CHAT, { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) });
    const { retries } = await drive((onRetry) => client({ onRetry, retry: { maxDelayMs: 3000 } }).createGuardedChatCompletion({ body: chat }));
    expect(retries.map((r) => r.delayMs)).toEqual([1125, 2250, 3375, 3375]);
    expect(gaps(attemptTimes(CHAT))).toEqual([1125, 2250, 3375, 3375]);
  });
});
