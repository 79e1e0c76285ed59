// The client object: routing between the two base URLs, credentials (API key and the
// deprecated OAuth client credentials), per-request overrides, fetch injection, timeouts
// merged with the caller's signal, deprecation warnings, pagination, no shared state.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { PlatformApi } from '../../generated/client/sdk.gen.js';
import { routes } from '../../generated/contract/routes.js';
import {
  APIConnectionTimeoutError,
  APIPromise,
  APIUserAbortError,
  AuthenticationError,
  PagePromise,
  Platform,
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

  it('lets a per-request Authorization header win, and sends none without a key', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    await client().getHealth(undefined, { headers: { Authorization: 'Bearer sk_other' } });
    await client({ apiKey: undefined }).getHealth();
    expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_other', undefined]);
  });

  it('reads the key and base URLs from the environment when not given', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    vi.stubEnv('PLATFORM_API_KEY', 'sk_env');
    vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', `${mgmt.url}/`);
    try {
      const platform = new Platform();
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

  it('keeps clients independent: no module-level client or registry is used', async () => {
    const other = await startFaultServer();
    try {
      mgmt.script('GET /api/v1/health', { status: 200, body: health });
      other.script('GET /api/v1/health', { status: 200, body: health });
      const first = client({ apiKey: 'sk_one' });
      const second = new Platform({ apiKey: 'sk_two', managementBaseUrl: other.url });
      await Promise.all([first.getHealth(), second.getHealth(), first.getHealth()]);
      expect(mgmt.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_one', 'Bearer sk_one']);
      expect(other.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk_two']);
      const registry = PlatformApi.__registry as unknown as { instances: Map<string, unknown> };
      expect(registry.instances.size).toBe(0);
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
    api.script('POST /ai/v2/responses', { status: 200, body: { id: 'r' } });
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

  it('stops fetching when the loop is left early', async () => {
    mgmt.script('GET /api/v1/agents', page(['a1', 'a2'], 'cur_2'), page(['a3'], null));
    for await (const item of client().listAgents()) {
      expect(item.id).toBe('a1');
      break;
    }
    expect(mgmt.requests).toHaveLength(1);
  });
});
