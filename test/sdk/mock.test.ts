// The SDK against the running mock (`npm run mock`: Prism answering from the contract's
// examples, plus its SSE front server): both APIs on one URL, streams of the contract's
// literal SSE examples, error examples chosen with `Prefer: code=`, pagination, OAuth.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AuthenticationError,
  GcAllowanceExhaustedError,
  Platform,
  SpendingLimitExceededError,
  type RetryEvent,
} from '../../sdk/src/index.js';

interface RunningMock {
  url: string;
  close(): Promise<void>;
}
// Imported by path so that this file compiles whether or not the mock is in the tree.
const MOCK_MODULE = fileURLToPath(new URL('../../mocks/serve.ts', import.meta.url));
const hasMock = existsSync(MOCK_MODULE);
// By path too: compiled by sdk/examples/tsconfig.json, not by the root project.
const PAGINATION_EXAMPLE = fileURLToPath(new URL('../../sdk/examples/pagination.ts', import.meta.url));

let mock: RunningMock;
let platform: Platform;
const warnings: string[] = [];
const retries: RetryEvent[] = [];

describe.skipIf(!hasMock)('against the mock', () => {
  beforeAll(async () => {
    const { startMock } = (await import(MOCK_MODULE)) as { startMock(options: { port: number; streamDelayMs: number }): Promise<RunningMock> };
    mock = await startMock({ port: 0, streamDelayMs: 5 });
    platform = new Platform({
      apiKey: 'sk_mock',
      baseUrl: mock.url,
      managementBaseUrl: mock.url,
      logger: { warn: (message) => warnings.push(message) },
      onRetry: (event) => retries.push(event),
    });
  }, 60_000);
  afterAll(() => mock?.close());

  const ask = { messages: [{ role: 'user' as const, content: 'What is hope?' }], auto_routing: true };

  it('answers management and inference operations from one URL', async () => {
    const health = await platform.getHealth();
    expect(health.data.status).toBe('healthy');
    const completion = await platform.createGuardedChatCompletion({ body: ask });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toContain('Hope');
  });

  it('streams the chat example chunk by chunk', async () => {
    const stream = await platform.createGuardedChatCompletion({ body: { ...ask, stream: true } });
    let chunks = 0;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      chunks += 1;
    }
    const result = await stream.collect();
    expect(chunks).toBeGreaterThan(2);
    expect(result.text).toBe('Hope is the confident expectation of good things to come.');
    expect(result.finishReason).toBe('stop');
  });

  it('exposes the grounded citations event', async () => {
    const stream = await platform.createGroundedChatCompletion({ body: { ...ask, rag_publisher: 'Example Publishing', include_citations: true, stream: true } });
    const result = await stream.collect();
    expect(result.citations?.[0]?.title).toBeTruthy();
    expect(result.text.length).toBeGreaterThan(0);
  });

  it('streams the Responses example as named events', async () => {
    const stream = await platform.createResponse({ body: { auto_routing: true, input: 'Define grace.', stream: true } });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    const result = await stream.collect();
    expect(result.text).toBe("Grace is God's unearned favour.");
    expect(result.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('turns the 429 spending-limit example (1005) into SpendingLimitExceededError without retrying', async () => {
    const before = retries.length;
    const error = await platform.createGuardedChatCompletion({ body: ask }, { headers: { Prefer: 'code=429, example=spending_limit_exceeded' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
    expect(error).toMatchObject({ status: 429, code: 1005, retryable: false });
    expect(retries.length).toBe(before);
  });

  it('turns the coding 402 example into GcAllowanceExhaustedError with topupAvailable', async () => {
    const error = await platform
      .createCodingChatCompletion({ path: { coding_product: 'code-assist' }, body: ask }, { headers: { Prefer: 'code=402' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GcAllowanceExhaustedError);
    expect(error).toMatchObject({ topupAvailable: true });
  });

  it('reports a missing key as AuthenticationError', async () => {
    const error = await platform.withOptions({ apiKey: null }).listModels().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
  });

  it('pages through agents with nextCursor and stops when the example repeats its cursor', async () => {
    const first = await platform.listAgents({ query: { limit: 1 } });
    expect(first.meta).toMatchObject({ hasMore: true });
    const seen: string[] = [];
    for await (const agent of platform.listAgents({ query: { limit: 1 } })) seen.push(agent.id);
    // Page 1, then the page of its cursor, which names the same cursor again: the walk ends.
    expect(seen).toEqual([first.data[0]!.id, first.data[0]!.id]);
  });

  it('runs examples/pagination.ts to its end', async () => {
    vi.stubEnv('PLATFORM_API_KEY', 'sk_mock');
    vi.stubEnv('PLATFORM_BASE_URL', mock.url);
    vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', mock.url);
    vi.doMock('@inference-platform/sdk', () => import('../../sdk/src/index.js'));
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('examples/pagination.ts did not finish')), 10_000);
      });
      await Promise.race([import(PAGINATION_EXAMPLE), stalled]).finally(() => clearTimeout(timer));
      expect(log.mock.calls.length).toBeGreaterThanOrEqual(3);
    } finally {
      log.mockRestore();
      vi.doUnmock('@inference-platform/sdk');
      vi.unstubAllEnvs();
    }
  });

  it('works with the deprecated OAuth client credentials, warning once', async () => {
    const oauth = new Platform({
      clientCredentials: { clientId: 'cli_01JDQC2W3E4R5T6Y7U8I9O0P1A', clientSecret: 'cs_9fK2mQ7xV3bN8tL4pR1wZ6yH' },
      baseUrl: mock.url,
      managementBaseUrl: mock.url,
      logger: { warn: vi.fn() },
    });
    await oauth.listModels();
    await oauth.getHealth();
    const models = await oauth.listModels();
    expect(models.data.length).toBeGreaterThan(0);
  });

  it('warns once when a deprecated operation is called', async () => {
    await platform.createResponseV1({ body: { model: 'gloo-openai-gpt-5-mini', input: 'Hello' } });
    await platform.createResponseV1({ body: { model: 'gloo-openai-gpt-5-mini', input: 'Hello' } });
    expect(warnings.filter((w) => w.includes('createResponseV1'))).toHaveLength(1);
    expect(warnings.find((w) => w.includes('createResponseV1'))).toContain('use createResponse()');
  });
});
