// The client object: routing between the two base URLs, credentials (API key and the
// deprecated OAuth client credentials), per-request overrides, fetch injection, timeouts
// merged with the caller's signal, deprecation warnings, pagination, no shared state.
import { getEventListeners } from 'node:events';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { clientRoutesById } from '../../generated/contract/client-routes.js';
import { routes } from '../../generated/contract/routes.js';
import {
  APIConnectionTimeoutError,
  APIPromise,
  APIResponseParseError,
  APIUserAbortError,
  AuthenticationError,
  NotFoundError,
  PagePromise,
  Platform,
  PlatformError,
  type Agent,
} from '../../sdk/src/index.js';
import { startFaultServer, type FaultServer } from './support/fault-server.js';
import { chat, until } from './support/helpers.js';

let api: FaultServer;
let mgmt: FaultServer;
beforeAll(async () => {
  [api, mgmt] = await Promise.all([startFaultServer(), startFaultServer()]);
});
afterAll(async () => {
  await Promise.all([api.close(), mgmt.close()]);
});
beforeEach(() => {
  api.reset();
  mgmt.reset();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const health = { data: { status: 'healthy', gateways: [] }, meta: { requestId: 'req_1' } };
const completion = { id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
const logger = () => ({ warn: vi.fn<(message: string) => void>() });
const client = (options: ConstructorParameters<typeof Platform>[0] = {}) =>
  new Platform({ apiKey: 'sk_live', baseUrl: api.url, managementBaseUrl: mgmt.url, logger: logger(), ...options });

describe('one client object for both APIs', () => {
  it('has a method for every operation of the route table', () => {
    const platform = client();
    for (const route of routes) expect(typeof (platform as unknown as Record<string, unknown>)[route.operationId], route.operationId).toBe('function');
  });

  it('sends management operations to the management base URL and the rest to the API base URL', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    api.script('POST /ai/v2/guarded/chat/completions', { status: 200, body: completion });
    const platform = client();
    await expect(platform.getHealth()).resolves.toEqual(health);
    await expect(platform.createGuardedChatCompletion({ body: chat })).resolves.toEqual(completion);
    expect(mgmt.requests.map((r) => r.path)).toEqual(['/api/v1/health']);
    expect(api.requests.map((r) => r.path)).toEqual(['/ai/v2/guarded/chat/completions']);
    for (const route of routes) expect(['api', 'management']).toContain(route.api);
  });

  it('fills path and query parameters from the contract shapes', async () => {
    mgmt.script('GET /api/v1/agents/agt_42', { status: 200, body: { data: { id: 'agt_42' }, meta: { requestId: 'r' } } });
    await client().getAgent({ path: { agent_id: 'agt_42' } });
    expect(mgmt.requests[0]!.path).toBe('/api/v1/agents/agt_42');
  });

  it('sends the API key as a bearer token, plus default and per-request headers', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    const platform = client({ defaultHeaders: { 'X-App': 'test-app', 'X-Drop': 'x' } });
    await platform.getHealth(undefined, { headers: { 'X-Request': 'one', 'X-Drop': null } });
    const { headers } = mgmt.requests[0]!;
    expect(headers.authorization).toBe('Bearer sk_live');
    expect(headers['x-app']).toBe('test-app');
    expect(headers['x-request']).toBe('one');
    expect(headers['x-drop']).toBeUndefined();
  });

  it('lets a per-request Authorization header win', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    await client().getHealth(undefined, { headers: { Authorization: 'Bearer sk_other' } });
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_other']);
  });

  it('reads the key and base URLs from the environment when not given', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    vi.stubEnv('PLATFORM_API_KEY', 'sk_env');
    vi.stubEnv('PLATFORM_BASE_URL', `${api.url}/`);
    vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', `${mgmt.url}/`);
    try {
      const platform = new Platform();
      expect(platform.baseUrl).toBe(api.url);
      expect(platform.managementBaseUrl).toBe(mgmt.url);
      await platform.getHealth();
      expect(mgmt.requests[0]!.headers.authorization).toBe('Bearer sk_env');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('routes a request to a per-request base URL', async () => {
    api.script('GET /api/v1/health', { status: 200, body: health });
    await client().getHealth(undefined, { baseUrl: api.url });
    expect(api.requests).toHaveLength(1);
    expect(mgmt.requests).toHaveLength(0);
  });

  it('uses an injected fetch, per client and per request', async () => {
    const seen: string[] = [];
    const fake = (tag: string) => async (request: Request) => {
      seen.push(`${tag} ${request.method} ${new URL(request.url).pathname} ${request.headers.get('authorization')}`);
      return new Response(JSON.stringify(health), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const platform = client({ fetch: fake('client') });
    await expect(platform.getHealth()).resolves.toEqual(health);
    await expect(platform.getHealth(undefined, { fetch: fake('request') })).resolves.toEqual(health);
    expect(seen).toEqual(['client GET /api/v1/health Bearer sk_live', 'request GET /api/v1/health Bearer sk_live']);
    expect(mgmt.requests).toHaveLength(0);
  });

  it('returns an APIPromise that also gives the response, trace id and rate-limit headers', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health, headers: { 'x-ratelimit-remaining': '41', 'x-ratelimit-limit': '50' } });
    const promise = client().getHealth();
    expect(promise).toBeInstanceOf(Promise);
    expect(promise).toBeInstanceOf(APIPromise);
    const { data, response, traceId, rateLimit } = await promise.withResponse();
    expect(data).toEqual(health);
    expect(response.status).toBe(200);
    expect(traceId).toBe(response.headers.get('x-trace-id'));
    expect(rateLimit).toEqual({ limit: 50, remaining: 41 });
    const [a, b] = await Promise.all([client().getHealth(), client().getHealth()]);
    expect(a).toEqual(b);
  });

  it('keeps clients independent: each sends its own key to its own base URL, concurrently', async () => {
    const other = await startFaultServer();
    try {
      mgmt.script('GET /api/v1/health', { status: 200, body: health });
      other.script('GET /api/v1/health', { status: 200, body: health });
      const first = client({ apiKey: 'sk_one' });
      const second = new Platform({ apiKey: 'sk_two', baseUrl: api.url, managementBaseUrl: other.url });
      await Promise.all([first.getHealth(), second.getHealth(), first.getHealth()]);
      expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_one', 'Bearer sk_one']);
      expect(other.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_two']);
    } finally {
      await other.close();
    }
  });

  it('derives a client with changed options (withOptions)', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    const base = client();
    const derived = base.withOptions({ apiKey: 'sk_derived' });
    await derived.getHealth();
    await base.getHealth();
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_derived', 'Bearer sk_live']);
  });
});

describe('timeouts merged with the caller signal', () => {
  it('reports the caller abort as APIUserAbortError, not a timeout', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health, delayMs: 5000 });
    const controller = new AbortController();
    const call = client({ timeout: 10_000 }).getHealth(undefined, { signal: controller.signal });
    await until(() => mgmt.requests.length === 1);
    controller.abort(new Error('user gave up'));
    await expect(call).rejects.toBeInstanceOf(APIUserAbortError);
    await until(() => mgmt.requests[0]!.wasAborted());
  });

  it('rejects at once with a signal that is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(client().getHealth(undefined, { signal: controller.signal })).rejects.toBeInstanceOf(APIUserAbortError);
    expect(mgmt.requests).toHaveLength(0);
  });

  it('times out on its own while the caller signal stays live', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health, delayMs: 2000 });
    const controller = new AbortController();
    const call = client({ timeout: 50, maxRetries: 0 }).getHealth(undefined, { signal: controller.signal });
    await expect(call).rejects.toBeInstanceOf(APIConnectionTimeoutError);
    expect(controller.signal.aborted).toBe(false);
  });

  it('covers a body that starts but never ends', async () => {
    mgmt.script('GET /api/v1/health', { sse: [{ raw: '{"data":' }, { pauseMs: 2000 }, { raw: '{}}' }] });
    await expect(client({ timeout: 100, maxRetries: 0 }).getHealth()).rejects.toBeInstanceOf(APIConnectionTimeoutError);
  });
});

describe('deprecated operations', () => {
  it('logs one warning per operation, naming its replacement', async () => {
    api.script('POST /ai/v1/responses', { status: 200, body: { id: 'r' } });
    api.script(`POST ${clientRoutesById.createResponse.path}`, { status: 200, body: { id: 'r' } });
    const log = logger();
    const platform = client({ logger: log });
    await platform.createResponseV1({ body: { model: 'm', input: 'x' } });
    await platform.createResponseV1({ body: { model: 'm', input: 'y' } });
    await platform.createResponse({ body: { model: 'm', input: 'z' } });
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(log.warn.mock.calls[0]![0]).toMatch(/createResponseV1\(\) \(POST \/ai\/v1\/responses\) is deprecated.*use createResponse\(\) instead/);
  });

  it('warns for every deprecated operation of the route table, with its replacement', async () => {
    const log = logger();
    const platform = client({ logger: log, fetch: async () => new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } }) });
    const deprecated = routes.filter((r) => r.deprecated);
    expect(deprecated.length).toBeGreaterThan(3);
    for (const route of deprecated) {
      const params =
        route.method === 'get' || route.method === 'delete'
          ? { path: { v: 'v1' }, query: { message_id: 'm', chat_id: 'c' } }
          : { body: { model: 'm', messages: [], input: 'x', grant_type: 'client_credentials' } };
      await (platform as unknown as Record<string, (p: unknown) => Promise<unknown>>)[route.operationId]!(params);
    }
    expect(log.warn).toHaveBeenCalledTimes(deprecated.length);
    for (const [i, route] of deprecated.entries()) {
      expect(log.warn.mock.calls[i]![0]).toContain(`${route.operationId}()`);
      if (route.replacedBy) expect(log.warn.mock.calls[i]![0]).toContain(`use ${route.replacedBy}()`);
    }
  });
});

describe('OAuth client credentials (deprecated)', () => {
  const token = (n: number, expiresIn = 3600) => ({ status: 200, body: { access_token: `tok_${n}`, expires_in: expiresIn, token_type: 'Bearer' } });

  it('fetches one token for concurrent requests, caches it and warns once', async () => {
    api.script('POST /oauth2/token', token(1));
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    const log = logger();
    const platform = new Platform({ clientCredentials: { clientId: 'cli_1', clientSecret: 'cs_1' }, baseUrl: api.url, managementBaseUrl: mgmt.url, logger: log });
    await Promise.all([platform.getHealth(), platform.getHealth(), platform.getHealth()]);
    await platform.getHealth();
    expect(api.requestsTo('POST /oauth2/token')).toHaveLength(1);
    const form = new URLSearchParams(api.requestsTo('POST /oauth2/token')[0]!.body);
    expect(Object.fromEntries(form)).toEqual({ grant_type: 'client_credentials', client_id: 'cli_1', client_secret: 'cs_1' });
    expect(api.requestsTo('POST /oauth2/token')[0]!.headers.authorization).toBeUndefined();
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(Array(4).fill('Bearer tok_1'));
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(log.warn.mock.calls[0]![0]).toMatch(/OAuth 2.0 client credentials are deprecated.*API key/);
  });

  it('refreshes the token before it expires', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    api.script('POST /oauth2/token', token(1, 600), token(2, 600));
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    const platform = new Platform({ clientCredentials: { clientId: 'c', clientSecret: 's' }, baseUrl: api.url, managementBaseUrl: mgmt.url, logger: logger() });
    await platform.getHealth();
    vi.setSystemTime(Date.now() + 530_000); // 70 s before expiry: still fresh (refresh margin: 60 s for a 600 s token)
    await platform.getHealth();
    vi.setSystemTime(Date.now() + 20_000); // 50 s before expiry: refreshed ahead of time
    await platform.getHealth();
    expect(api.requestsTo('POST /oauth2/token')).toHaveLength(2);
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer tok_1', 'Bearer tok_1', 'Bearer tok_2']);
  });

  it('fetches a new token once after a 401 and retries the request', async () => {
    api.script('POST /oauth2/token', token(1), token(2));
    mgmt.script(
      'GET /api/v1/health',
      { status: 401, body: { error: { code: 'unauthorized', message: 'revoked' }, meta: { requestId: 'r' }, trace_id: 't' } },
      { status: 200, body: health },
    );
    const platform = new Platform({ clientCredentials: { clientId: 'c', clientSecret: 's' }, baseUrl: api.url, managementBaseUrl: mgmt.url, logger: logger() });
    await expect(platform.getHealth()).resolves.toEqual(health);
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer tok_1', 'Bearer tok_2']);
  });

  it('re-fetches a revoked token once for many concurrent requests, which all succeed', async () => {
    api.script('POST /oauth2/token', token(1), token(2), token(3), token(4));
    let revoked = false;
    const unauthorized = { status: 401, body: { error: { code: 'unauthorized', message: 'revoked' }, meta: { requestId: 'r' }, trace_id: 't' } };
    mgmt.script('GET /api/v1/health', { respond: (r) => (revoked && r.headers.authorization === 'Bearer tok_1' ? unauthorized : { status: 200, body: health }) });
    const platform = new Platform({ clientCredentials: { clientId: 'c', clientSecret: 's' }, baseUrl: api.url, managementBaseUrl: mgmt.url, logger: logger() });
    await platform.getHealth();
    revoked = true;
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => platform.getHealth()));
    expect(results.map((r) => r.status)).toEqual(Array(5).fill('fulfilled'));
    expect(api.requestsTo('POST /oauth2/token')).toHaveLength(2);
    const sent = mgmt.requests.slice(1).map((r) => r.headers.authorization);
    expect(sent.filter((a) => a === 'Bearer tok_1')).toHaveLength(5);
    expect(sent.filter((a) => a === 'Bearer tok_2')).toHaveLength(5);
    await platform.getHealth();
    expect(api.requestsTo('POST /oauth2/token')).toHaveLength(2);
  });

  it('shares the token and the once-per-client warnings with clients derived by withOptions', async () => {
    api.script('POST /oauth2/token', token(1), token(2));
    api.script('POST /ai/v1/responses', { status: 200, body: { id: 'r' } });
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    const log = logger();
    const credentials = { clientId: 'c', clientSecret: 's' };
    const parent = new Platform({ clientCredentials: credentials, baseUrl: api.url, managementBaseUrl: mgmt.url, logger: log });
    await parent.getHealth();
    await parent.createResponseV1({ body: { model: 'm', input: 'x' } });
    const child = parent.withOptions({ timeout: 5000 });
    const grandchild = child.withOptions({ defaultHeaders: { 'X-App': 'derived' } });
    await child.getHealth();
    await child.createResponseV1({ body: { model: 'm', input: 'y' } });
    await grandchild.getHealth();
    expect(api.requestsTo('POST /oauth2/token')).toHaveLength(1);
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(Array(3).fill('Bearer tok_1'));
    expect(log.warn).toHaveBeenCalledTimes(2); // OAuth deprecation + createResponseV1, once in all
    // Other credentials: a token of their own.
    const other = parent.withOptions({ clientCredentials: { clientId: 'c2', clientSecret: 's2' } });
    await other.getHealth();
    expect(api.requestsTo('POST /oauth2/token')).toHaveLength(2);
    expect(mgmt.requests.at(-1)!.headers.authorization).toBe('Bearer tok_2');
  });

  it('reports a rejected client as AuthenticationError', async () => {
    api.script('POST /oauth2/token', { status: 401, body: { error: 'invalid_client', error_description: 'Unknown client.', trace_id: 'trc_o' } });
    const platform = new Platform({ clientCredentials: { clientId: 'c', clientSecret: 'bad' }, baseUrl: api.url, managementBaseUrl: mgmt.url, logger: logger() });
    const error = await platform.getHealth().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ code: 'invalid_client', traceId: 'trc_o' });
    expect(mgmt.requests).toHaveLength(0);
  });
});

describe('auto-pagination of management lists', () => {
  const agent = (id: string) => ({ id, name: `Agent ${id}` });
  const page = (ids: string[], nextCursor: string | null) => ({
    status: 200,
    body: { data: ids.map(agent), meta: { requestId: 'r', hasMore: nextCursor !== null, nextCursor } },
  });

  it('walks every agent through nextCursor with for await', async () => {
    mgmt.script('GET /api/v1/agents', page(['a1', 'a2'], 'cur_2'), page(['a3', 'a4'], 'cur_3'), page(['a5'], null));
    const listing = client().listAgents({ query: { limit: 2 } });
    expect(listing).toBeInstanceOf(PagePromise);
    const ids: string[] = [];
    for await (const item of listing) {
      const typed: Agent = item;
      ids.push(typed.id);
    }
    expect(ids).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    expect(mgmt.requests.map((r) => r.path)).toEqual(['/api/v1/agents?limit=2', '/api/v1/agents?limit=2&cursor=cur_2', '/api/v1/agents?limit=2&cursor=cur_3']);
  });

  it('gives the first page when awaited, and pages with pages()', async () => {
    mgmt.script('GET /api/v1/keys', page(['k1'], 'c2'), page(['k2'], null));
    const first = await client().listKeys();
    expect(first.data).toHaveLength(1);
    mgmt.reset();
    mgmt.script('GET /api/v1/keys', page(['k1'], 'c2'), page(['k2'], null));
    const sizes: number[] = [];
    for await (const p of client().listKeys().pages()) sizes.push(p.data.length);
    expect(sizes).toEqual([1, 1]);
  });

  it('stops on a cursor the server repeats (the mock answers hasMore: true with one fixed cursor)', async () => {
    mgmt.script('GET /api/v1/agents', page(['a1'], 'cur_fixed'));
    const ids: string[] = [];
    for await (const item of client().listAgents()) {
      ids.push(item.id);
      if (ids.length > 20) break; // the guard of this test only: without the fix it would never end
    }
    expect(ids).toEqual(['a1', 'a1']);
    expect(mgmt.requests.map((r) => r.path)).toEqual(['/api/v1/agents', '/api/v1/agents?cursor=cur_fixed']);
  });

  it('stops on a cycle of cursors, and on the cursor the first page was asked with', async () => {
    mgmt.script('GET /api/v1/agents', page(['a1'], 'cur_a'), page(['a2'], 'cur_b'), page(['a3'], 'cur_a'), page(['a4'], null));
    const pages: number[] = [];
    for await (const p of client().listAgents().pages()) {
      pages.push(p.data.length);
      if (pages.length > 20) break;
    }
    expect(pages).toEqual([1, 1, 1]);
    mgmt.reset();
    mgmt.script('GET /api/v1/agents', page(['a1'], 'cur_1'), page(['a2'], null));
    const ids: string[] = [];
    for await (const item of client().listAgents({ query: { cursor: 'cur_1' } })) {
      ids.push(item.id);
      if (ids.length > 20) break;
    }
    expect(ids).toEqual(['a1']);
    expect(mgmt.requests).toHaveLength(1);
  });

  it('stops on an empty page, even one that claims more', async () => {
    mgmt.script('GET /api/v1/agents', page(['a1', 'a2'], 'cur_2'), page([], 'cur_3'), page(['a9'], null));
    const ids: string[] = [];
    for await (const item of client().listAgents()) ids.push(item.id);
    expect(ids).toEqual(['a1', 'a2']);
    expect(mgmt.requests).toHaveLength(2);
  });

  it('stops fetching when the loop is left early', async () => {
    mgmt.script('GET /api/v1/agents', page(['a1', 'a2'], 'cur_2'), page(['a3'], null));
    for await (const item of client().listAgents()) {
      expect(item.id).toBe('a1');
      break;
    }
    expect(mgmt.requests).toHaveLength(1);
  });
});

describe('call results', () => {
  it('rejects (never throws synchronously) for an unknown operation', async () => {
    const platform = client();
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = (platform.call as unknown as (operationId: string) => Promise<unknown>)('noSuchOperation');
    }).not.toThrow();
    expect(promise).toBeInstanceOf(APIPromise);
    await expect(promise).rejects.toBeInstanceOf(PlatformError);
    await expect(promise).rejects.toThrow(/Unknown operation: noSuchOperation/);
    const inherited = (platform.call as unknown as (operationId: string) => Promise<unknown>)('toString');
    await expect(inherited).rejects.toBeInstanceOf(PlatformError);
  });

  it('throws APIResponseParseError (not a SyntaxError) for a 2xx whose JSON body is broken', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: '{"data": {"status": "heal', headers: { 'content-type': 'application/json' } });
    const error = await client().getHealth().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIResponseParseError);
    expect(error).toBeInstanceOf(PlatformError);
    const parseError = error as APIResponseParseError;
    expect(parseError.cause).toBeInstanceOf(SyntaxError);
    expect(parseError.status).toBe(200);
    expect(parseError.headers.get('content-type')).toBe('application/json');
    expect(parseError.traceId).toMatch(/^trc_/);
    expect(parseError.traceId).toBe(parseError.headers.get('x-trace-id'));
    expect(parseError.message).toContain(parseError.traceId);
    expect(mgmt.requests).toHaveLength(1); // the request ran: not retried
  });

  it('builds its Request without credentials, and without redirect unless set (edge runtimes reject them)', async () => {
    const inits: RequestInit[] = [];
    const Original = globalThis.Request;
    const originalFetch = globalThis.fetch;
    vi.stubGlobal(
      'Request',
      class extends Original {
        constructor(input: RequestInfo | URL, init?: RequestInit) {
          if (init?.signal) inits.push(init); // the transport's attempts carry the linked signal
          super(input, init);
        }
      },
    );
    // The default path hands the global fetch the URL and the init, no Request.
    vi.stubGlobal('fetch', (input: RequestInfo | URL, init?: RequestInit) => {
      if (init?.signal) inits.push(init);
      return originalFetch(input, init);
    });
    try {
      mgmt.script('GET /api/v1/health', { status: 200, body: health });
      mgmt.script('POST /api/v1/agents', { status: 201, body: { data: { id: 'agt_1' }, meta: { requestId: 'r' } } });
      mgmt.script('GET /api/v1/health', { status: 200, body: health });
      await client().getHealth();
      await client().createAgent({ body: { name: 'A' } });
      await client({ fetch: (request) => originalFetch(request) }).getHealth();
    } finally {
      vi.unstubAllGlobals();
    }
    expect(inits).toHaveLength(3);
    for (const init of inits) {
      expect(init).not.toHaveProperty('credentials');
      expect(init).not.toHaveProperty('redirect');
    }
    expect(mgmt.requests).toHaveLength(3);
    expect(JSON.parse(mgmt.requests[1]!.body)).toEqual({ name: 'A' });
  });
});

describe('per-call work', () => {
  it('builds no Request on the default path (the global fetch gets the URL and an init), one per attempt for an injected fetch', async () => {
    let built = 0;
    const Original = globalThis.Request;
    vi.stubGlobal(
      'Request',
      class extends Original {
        constructor(input: RequestInfo | URL, init?: RequestInit) {
          built += 1;
          super(input, init);
        }
      },
    );
    try {
      mgmt.script('GET /api/v1/health', { status: 200, body: health });
      mgmt.script('POST /api/v1/agents', { status: 201, body: { data: { id: 'agt_1' }, meta: { requestId: 'r' } } });
      api.script('POST /ai/v2/guarded/chat/completions', { sse: [{ data: { ...completion, object: 'chat.completion.chunk', choices: [] } }, { data: '[DONE]' }] });
      const platform = client();
      await platform.management.health();
      await platform.management.agents.create({ name: 'A' });
      await (await platform.chat.completions.create({ ...chat, stream: true })).collect();
      expect(built).toBe(0);
      await client({ fetch: (request) => globalThis.fetch(request) }).management.health();
      expect(built).toBe(1);
    } finally {
      vi.unstubAllGlobals();
    }
    expect(JSON.parse(mgmt.requests[1]!.body)).toEqual({ name: 'A' });
    expect(mgmt.requests[1]!.headers['content-type']).toBe('application/json');
    expect(mgmt.requests[0]!.headers['content-type']).toBeUndefined();
  });
});

describe('abort listeners on the caller signal', () => {
  const CHAT = 'POST /ai/v2/guarded/chat/completions';
  const sseChunk = (content: string, finish: string | null = null) => ({
    data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] },
  });
  const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

  it('are all removed once calls settle and streams end, however they end', async () => {
    const signal = new AbortController().signal;
    const platform = client({ retry: { initialDelayMs: 1 } });
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    mgmt.script('GET /api/v1/agents/missing', { status: 404, body: { error: { code: 'not_found', message: 'no' }, meta: { requestId: 'r' } } });
    mgmt.script('GET /api/v1/agents/flaky', { status: 503, body: { detail: 'down' } }, { status: 200, body: { data: { id: 'flaky' }, meta: { requestId: 'r' } } });
    for (let i = 0; i < 20; i++) await platform.getHealth(undefined, { signal });
    for (let i = 0; i < 5; i++) await expect(platform.getAgent({ path: { agent_id: 'missing' } }, { signal })).rejects.toBeInstanceOf(NotFoundError);
    await platform.getAgent({ path: { agent_id: 'flaky' } }, { signal });
    await expect(platform.getHealth(undefined, { signal, timeout: 1, maxRetries: 0, fetch: (request) => new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason))) })).rejects.toBeInstanceOf(APIConnectionTimeoutError);

    api.script(CHAT, { sse: [sseChunk('a'), sseChunk('b'), sseChunk('c', 'stop'), { data: '[DONE]' }] });
    for (let i = 0; i < 5; i++) {
      const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { signal });
      await expect(stream.finalText()).resolves.toBe('abc');
    }
    for (let i = 0; i < 5; i++) {
      const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { signal });
      for await (const event of stream) {
        void event;
        break;
      }
    }
    api.script(CHAT, { sse: [sseChunk('a'), { data: '{"broken' }] });
    for (let i = 0; i < 3; i++) {
      const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { signal });
      await expect(stream.collect()).rejects.toBeInstanceOf(PlatformError);
    }
    expect(listeners(signal)).toBe(0);
  });

  it('are removed at once when a stream nobody reads is aborted', async () => {
    const signal = new AbortController().signal;
    api.script(CHAT, { sse: [sseChunk('a'), { pauseMs: 5000 }, sseChunk('b', 'stop')] });
    const stream = await client({ timeout: 60_000 }).createGuardedChatCompletion({ body: { ...chat, stream: true } }, { signal });
    expect(listeners(signal)).toBe(1);
    stream.abort();
    expect(listeners(signal)).toBe(0);
    await until(() => api.requestsTo(CHAT)[0]!.wasAborted(), 2000);
  });

  it('are removed from a stream nobody reads once its idle timeout passes, and the request is aborted', async () => {
    const signal = new AbortController().signal;
    api.script(CHAT, { sse: [sseChunk('a'), { pauseMs: 5000 }, sseChunk('b', 'stop')] });
    const unread = await client({ timeout: 100 }).createGuardedChatCompletion({ body: { ...chat, stream: true } }, { signal });
    expect(unread.finished).toBe(false);
    expect(listeners(signal)).toBe(1);
    await until(() => listeners(signal) === 0, 2000);
    await until(() => api.requestsTo(CHAT)[0]!.wasAborted(), 2000);
  });
});
