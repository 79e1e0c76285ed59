// The SDK against the real server, in-process (in-memory database): trace ids, the real
// 401 / 404 / 422 / 501 bodies parsed into typed errors, management routing and, where the
// server implements them already, management writes and auto-pagination.
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import {
  APIError,
  AuthenticationError,
  NotFoundError,
  NotImplementedError,
  Platform,
  UnprocessableEntityError,
  ValidationError,
  type RetryEvent,
} from '../../sdk/src/index.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

const TRACE = /^trc_[0-9a-f]{32}$/;
let platform: TestPlatform;
let sdk: Platform;
const retries: RetryEvent[] = [];

beforeAll(async () => {
  platform = await startTestPlatform();
  sdk = new Platform({
    apiKey: platform.adminKey,
    baseUrl: platform.apiUrl,
    managementBaseUrl: platform.mgmtUrl,
    logger: { warn: () => undefined },
    onRetry: (event) => retries.push(event),
    retry: { initialDelayMs: 10 },
  });
});
afterAll(() => platform?.close());

/** Skips a test whose operation the server still answers with its 501 stub. */
async function orSkipWhenStubbed<T>(ctx: TestContext, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof NotImplementedError) ctx.skip(`${error.message} (server stub)`);
    throw error;
  }
}

describe('against the real server', () => {
  it('reads the platform health from the management API, with the trace id of the answer', async () => {
    const { data, traceId, response } = await sdk.getHealth().withResponse();
    expect(typeof data.data.status).toBe('string');
    expect(Array.isArray(data.data.gateways)).toBe(true);
    expect(traceId).toMatch(TRACE);
    expect(response.url.startsWith(platform.mgmtUrl)).toBe(true);
  });

  it('parses the management 401 into AuthenticationError with the trace id of the answer', async () => {
    const anonymous = sdk.withOptions({ apiKey: null });
    const error = (await anonymous.getHealth().catch((e: unknown) => e)) as APIError;
    expect(error).toBeInstanceOf(AuthenticationError);
    // The body's machine code (`unauthorized_missing_authorization`) is no catalog name and it
    // states no category: name and class come from the status, nothing else is invented.
    expect(error).toMatchObject({ status: 401, name: 'UNAUTHORIZED', retryable: false, category: undefined, code: 'unauthorized_missing_authorization' });
    expect(error.traceId).toMatch(TRACE);
    expect(error.traceId).toBe(error.headers.get('x-trace-id'));
  });

  it('parses the gateway 401 of a data operation and the AI 401 of a completion', async () => {
    const anonymous = sdk.withOptions({ apiKey: null });
    const gateway = (await anonymous.getFile({ path: { item_id: '7d1c8f9e-3a52-4c1e-9a1f-2b7f3c4d5e6f' } }).catch((e: unknown) => e)) as APIError;
    expect(gateway).toBeInstanceOf(AuthenticationError);
    expect(gateway).toMatchObject({ code: 'unauthorized_missing_authorization', name: 'UNAUTHORIZED' });
    expect(gateway.traceId).toMatch(TRACE);

    const ai = (await anonymous
      .createGuardedChatCompletion({ body: { model: 'gloo-openai-gpt-5-mini', messages: [{ role: 'user', content: 'Hi' }] } })
      .catch((e: unknown) => e)) as APIError;
    expect(ai).toBeInstanceOf(AuthenticationError);
    expect(ai).toMatchObject({ name: 'UNAUTHORIZED', category: 'client', retryable: false });
    expect(typeof ai.code).toBe('number');
    expect(ai.traceId).toMatch(TRACE);
  });

  it('parses a 422 into ValidationError with the failing fields', async () => {
    const error = (await sdk
      // deliberately invalid: `messages` is required by the contract
      .createGuardedChatCompletion({ body: { model: 'gloo-openai-gpt-5-mini' } as never })
      .catch((e: unknown) => e)) as APIError;
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.details?.some((d) => d.loc.includes('messages'))).toBe(true);
    expect(error.traceId).toMatch(TRACE);
  });

  it('parses a 404 into NotFoundError', async (ctx) => {
    const error = await orSkipWhenStubbed(ctx, () => sdk.getAgent({ path: { agent_id: '5f0c2a9e-7b1d-4c3e-9a8f-1d2e3f4a5b6c' } }).then(() => undefined, (e: unknown) => { if (e instanceof NotImplementedError) throw e; return e; }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, name: 'NOT_FOUND' });
  });

  it('reports a 501 stub as NotImplementedError without retrying it', async () => {
    const before = retries.length;
    const attempts: Array<() => Promise<unknown>> = [
      // Operations whose 501 is in the AI error shape (with a category), while they are stubs.
      () => sdk.createResponse({ body: { model: 'gloo-openai-gpt-5-mini', input: 'Hi' } }),
      () => sdk.createGroundedResponse({ body: { model: 'gloo-openai-gpt-5-mini', input: 'Hi', rag_publisher: 'default' } as never }),
    ];
    let stub: APIError | undefined;
    for (const attempt of attempts) {
      const outcome = await attempt().catch((e: unknown) => e);
      if (outcome instanceof NotImplementedError) {
        stub = outcome;
        break;
      }
    }
    if (!stub) return; // every candidate is implemented by now
    expect(stub).toMatchObject({ status: 501, name: 'NOT_IMPLEMENTED', retryable: false, category: 'platform' });
    expect(stub.traceId).toMatch(TRACE);
    expect(retries.length).toBe(before);
  });

  it('creates agents and walks them all with for await through nextCursor', async (ctx) => {
    const names = ['sdk-page-1', 'sdk-page-2', 'sdk-page-3', 'sdk-page-4', 'sdk-page-5'];
    for (const name of names) await orSkipWhenStubbed(ctx, () => sdk.createAgent({ body: { name } }));
    const seen: string[] = [];
    const listing = sdk.listAgents({ query: { limit: 2 } });
    for await (const agent of listing) seen.push(agent.name);
    expect(seen).toEqual(expect.arrayContaining(names));
    const first = await listing;
    expect(first.data.length).toBeLessThanOrEqual(2);
    expect(first.meta.hasMore).toBe(true);
  });

  it('creates an API key and calls with it', async (ctx) => {
    const created = await orSkipWhenStubbed(ctx, () => sdk.createKey({ body: { scopes: ['agents:read'], label: 'sdk test' } }));
    const scoped = sdk.withOptions({ apiKey: created.data.key });
    await expect(scoped.getHealth()).resolves.toBeDefined();
    const ids: string[] = [];
    for await (const key of sdk.listKeys({ query: { limit: 1 } })) ids.push(key.id);
    expect(ids).toContain(created.data.id);
  });

  it('authenticates with deprecated OAuth client credentials against the real token endpoint', async () => {
    const org = await platform.services.identity.organizations.findOrganization('default');
    const credentials = await platform.services.identity.oauth.createClient(org.id, ['agents:read']);
    const warnings: string[] = [];
    const oauth = new Platform({
      clientCredentials: credentials,
      baseUrl: platform.apiUrl,
      managementBaseUrl: platform.mgmtUrl,
      logger: { warn: (message) => warnings.push(message) },
    });
    const page = await oauth.listAgents({ query: { limit: 1 } });
    expect(page.meta.requestId).toMatch(TRACE);
    expect(warnings.join('\n')).toMatch(/deprecated/i);
  });

  it('retries a POST whose answer was lost without running it twice (Idempotency-Key)', async () => {
    let calls = 0;
    const lossy = sdk.withOptions({
      fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
        const response = await fetch(input, init);
        // The first answer reaches the server's side of the wire, then the connection "drops".
        if (++calls === 1) {
          await response.arrayBuffer();
          throw new TypeError('fetch failed: socket hang up');
        }
        return response;
      },
    });
    const name = `idempotent-${Date.now()}`;
    const created = await lossy.createAgent({ body: { name } }).withResponse();
    expect(calls).toBe(2);
    expect(created.response.headers.get('idempotent-replayed')).toBe('true');
    expect(await platform.services.database.prisma.agent.count({ where: { name } })).toBe(1);
  });
});

