// The mock (`npm run mock`) answers every operation of the contract with the contract's own
// example, called through the SDK, and streams the SSE examples event by event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createConfig } from '../../generated/client/client/index.js';
import { PlatformApi } from '../../generated/client/index.js';
import { routes, routesById, type OperationId, type RouteDefinition } from '../../generated/contract/routes.js';
import { startMock, type RunningMock } from '../../mocks/serve.js';
import { defaultExample, deref } from '../../scripts/codegen/contract.js';
import { Platform } from '../../sdk/src/index.js';
import { contractDocument, contractProblems } from '../support/contract.js';
import { sampleRequest } from '../support/requests.js';

type Json = Record<string, any>;
interface SdkResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}
type SdkMethod = (options: Json) => Promise<SdkResult>;

const STREAM_DELAY_MS = 40;
const OAUTH_CLIENT = 'cli_01JDQC2W3E4R5T6Y7U8I9O0P1A:cs_9fK2mQ7xV3bN8tL4pR1wZ6yH';

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock({ port: 0, streamDelayMs: STREAM_DELAY_MS });
});
afterAll(() => mock?.close());

/** An SDK whose client sends `Bearer <key>` (none when key is null) and Basic OAuth client credentials. */
function sdk(key: string | null = 'sk_test'): PlatformApi {
  const auth = (a: { scheme?: string }) => (a.scheme === 'basic' ? OAUTH_CLIENT : (key ?? undefined));
  return new PlatformApi({ client: createClient(createConfig({ baseUrl: mock.url, auth })) });
}
const call = (api: PlatformApi, id: OperationId, options: Json) => (api as unknown as Record<OperationId, SdkMethod>)[id].call(api, options);

const resolve = (node: Json): Json => deref(contractDocument, node);
const declaredResponse = (route: RouteDefinition, status: number) =>
  resolve(contractDocument.paths[route.path][route.method].responses[String(status)]);
const defaultExampleOf = (media: Json): any => defaultExample(contractDocument, media);
const TRACE_ID = /^trc_[0-9a-f]{32}$/;

/** The generated SDK's options (path, query, body) for the contract-valid request test/support samples. */
function sdkOptions(route: RouteDefinition): Json {
  const { path: target, init } = sampleRequest(route);
  const url = new URL(target, 'http://sample');
  const names = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  const values = url.pathname.match(new RegExp(`^${route.path.replace(/\{[^}]+\}/g, '([^/]+)')}$`))!.slice(1);
  const options: Json = {};
  if (names.length) options.path = Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(values[i])]));
  if (url.search) options.query = Object.fromEntries(url.searchParams);
  if (init.body instanceof FormData) {
    // Text fields stay strings; file parts become the array the schema declares (`files`).
    const body: Json = {};
    init.body.forEach((value, key) => (typeof value === 'string' ? (body[key] = value) : (body[key] ??= []).push(value)));
    options.body = body;
  } else if (route.requestMediaType === 'application/x-www-form-urlencoded') {
    // Client credentials go as HTTP Basic (the client's auth), so the form carries only the grant.
    const form = Object.fromEntries(new URLSearchParams(String(init.body)));
    delete form.client_id;
    delete form.client_secret;
    options.body = form;
  } else if (typeof init.body === 'string') {
    options.body = JSON.parse(init.body);
    if (route.sse) options.body.stream = false;
  }
  return options;
}

/** The published SDK, pointed at the mock for both APIs. */
const platformSdk = () =>
  new Platform({ apiKey: 'sk_test', baseUrl: mock.url, managementBaseUrl: mock.url, maxRetries: 0, logger: { warn: () => undefined } });

describe.each(routes.map((r) => [`${r.method.toUpperCase()} ${r.path} (${r.operationId})`, r] as const))('%s', (_name, route) => {
  it('answers the contract example through the SDK', async () => {
    const options = sdkOptions(route);
    if (route.requestMediaType === 'application/x-www-form-urlencoded') {
      // The SDK sends OAuth client credentials as form fields.
      const [clientId, clientSecret] = OAUTH_CLIENT.split(':');
      options.body = { ...options.body, client_id: clientId, client_secret: clientSecret };
    }
    const sdk = platformSdk() as unknown as { call(id: OperationId, params: Json): { withResponse(): Promise<{ data: unknown; response: Response }> } };
    const { data, response } = await sdk.call(route.operationId, options).withResponse();
    expect(response.status).toBe(route.successStatus);
    // Prism reports any request or response that breaks the contract in this header.
    expect(response.headers.get('sl-violations')).toBeNull();
    const declared = declaredResponse(route, route.successStatus);
    // JSON answers, or text for the Prometheus metrics.
    expect(data).toEqual(defaultExampleOf(declared.content['application/json'] ?? declared.content['text/plain']));
    for (const [name, header] of Object.entries<Json>(declared.headers ?? {})) {
      const { example } = resolve(header);
      if (example !== undefined) expect(response.headers.get(name), name).toBe(String(example));
    }
  });
});

interface Chunk {
  at: number;
  text: string;
}
async function readChunks(body: ReadableStream<Uint8Array>): Promise<Chunk[]> {
  const chunks: Chunk[] = [];
  const decoder = new TextDecoder();
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) chunks.push({ at: performance.now(), text: decoder.decode(bytes) });
  return chunks;
}
function parseSse(text: string): Array<{ event?: string; data: string }> {
  return text
    .split(/\n\n/)
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return event ? { event, data } : { data };
    });
}
const sseExample = (route: RouteDefinition): string => defaultExampleOf(declaredResponse(route, 200).content['text/event-stream']);

/** Streams one operation through the SDK; checks the events come one by one and match the contract's example. */
async function streamThroughSdk(id: OperationId, options: Json) {
  const route = routesById[id];
  const { data, response } = await call(sdk(), id, { ...options, parseAs: 'stream' });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  const chunks = await readChunks(data as ReadableStream<Uint8Array>);
  const events = parseSse(chunks.map((c) => c.text).join(''));
  expect(events).toEqual(parseSse(sseExample(route)));
  // Incremental: several separate chunks, spread over time by the configured delay.
  expect(chunks.length).toBeGreaterThanOrEqual(3);
  expect(chunks.at(-1)!.at - chunks[0].at).toBeGreaterThanOrEqual((events.length - 1) * STREAM_DELAY_MS * 0.8);
  return { events, response };
}

describe('streaming', () => {
  it('streams a guarded chat completion chunk by chunk, ending with the finish chunk and [DONE]', async () => {
    const body = { ...sdkOptions(routesById.createGuardedChatCompletion).body, stream: true };
    const { events } = await streamThroughSdk('createGuardedChatCompletion', { body });
    expect(events.length).toBeGreaterThanOrEqual(4);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
  });

  it('streams a Responses call as named events ending with response.completed', async () => {
    const body = { ...sdkOptions(routesById.createResponse).body, stream: true };
    const { events } = await streamThroughSdk('createResponse', { body });
    expect(events[0].event).toBe('response.created');
    expect(events.at(-1)!.event).toBe('response.completed');
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
    expect(JSON.parse(events.at(-1)!.data).response.status).toBe('completed');
  });

  it('sends the headers the contract declares for a streamed grounded response', async () => {
    const body = { ...sdkOptions(routesById.createGroundedResponse).body, stream: true };
    const { response } = await streamThroughSdk('createGroundedResponse', { body });
    expect(response.headers.get('x-sources-returned')).toBe('true');
  });

  it('streams on Accept: text/event-stream alone', async () => {
    const { body } = sdkOptions(routesById.createChatCompletionV1);
    await streamThroughSdk('createChatCompletionV1', { body, headers: { Accept: 'text/event-stream' } });
  });

  it('refuses a stream without Authorization with the contract 401, as JSON', async () => {
    const route = routesById.createResponse;
    const { error, response } = await call(sdk(null), 'createResponse', { body: { ...sdkOptions(route).body, stream: true } });
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(error).toEqual(defaultExampleOf(declaredResponse(route, 401).content['application/json']));
  });

  it('validates a stream request before streaming (422 for a body without messages)', async () => {
    const { response } = await call(sdk(), 'createGuardedChatCompletion', { body: { auto_routing: true, stream: true } });
    expect(response.status).toBe(422);
  });
});

describe('Prism behaviour through the front server', () => {
  it('answers a missing Authorization with the contract 401', async () => {
    const route = routesById.listModels;
    const { error, response } = await call(sdk(null), 'listModels', {});
    expect(response.status).toBe(401);
    expect(error).toEqual(defaultExampleOf(declaredResponse(route, 401).content['application/json']));
  });

  it('answers a management call without Authorization with the management 401', async () => {
    const route = routesById.listKeys;
    const { error, response } = await call(sdk(null), 'listKeys', {});
    expect(response.status).toBe(401);
    expect(error).toEqual(defaultExampleOf(declaredResponse(route, 401).content['application/json']));
  });

  it('passes Prefer: code=404 through to pick a declared error example', async () => {
    const route = routesById.getItem;
    const { error, response } = await call(sdk(), 'getItem', { ...sdkOptions(route), headers: { Prefer: 'code=404' } });
    expect(response.status).toBe(404);
    expect(error).toEqual(defaultExampleOf(declaredResponse(route, 404).content['application/json']));
  });

  it('answers an undeclared path with 404', async () => {
    const res = await fetch(`${mock.url}/no/such/path`, { headers: { Authorization: 'Bearer sk_test' } });
    expect(res.status).toBe(404);
  });
});

/** A raw call to the mock (no SDK): JSON body, Bearer key. */
async function raw(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { Authorization: 'Bearer sk_test', ...init.headers };
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${mock.url}${path}`, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { res, text, json };
}

describe('trace ids on the mock\'s own errors (issue 9)', () => {
  it('answers an unknown path with a gateway-shaped 404 carrying a fresh trace id, also in X-Trace-Id', async () => {
    const { res, json } = await raw('/no/such/path');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(json).toMatchObject({ error: expect.any(String), code: 'not_found', trace_id: expect.stringMatching(TRACE_ID) });
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
  });

  it('answers an unknown management path in the management error shape', async () => {
    const { res, json } = await raw('/api/v1/no-such-thing');
    expect(res.status).toBe(404);
    expect(json).toMatchObject({ error: { code: 'not_found' }, trace_id: expect.stringMatching(TRACE_ID) });
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
  });

  it('answers an undeclared Prefer code in the operation\'s error shape', async () => {
    const route = routesById.getItem;
    const { path } = sampleRequest(route);
    const { res, json } = await raw(path, { headers: { Prefer: 'code=418' } });
    expect(res.status).toBe(404);
    expect(contractProblems('getItem', 404, json)).toEqual([]);
    expect(json.detail).toContain('418');
    expect(json.trace_id).toMatch(TRACE_ID);
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
  });

  it('answers a request validation failure with its reasons in the contract 422 shape and a fresh trace id', async () => {
    const { res, json } = await raw(routesById.createGuardedChatCompletion.path, { method: 'POST', body: { auto_routing: true } });
    expect(res.status).toBe(422);
    expect(contractProblems('createGuardedChatCompletion', 422, json)).toEqual([]);
    expect(json.detail.some((d: Json) => d.loc[0] === 'body' && /messages/.test(d.msg + d.loc.join('.')))).toBe(true);
    expect(json.trace_id).toMatch(TRACE_ID);
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
    expect(res.headers.get('sl-violations')).toBeTruthy();
  });

  it('refuses metadata past its bounds (a 513-character value, a 65-character key) as the server does', async () => {
    const ask = { model: 'gloo-openai-gpt-5-mini', messages: [{ role: 'user', content: 'hi' }] };
    for (const metadata of [{ note: 'v'.repeat(513) }, { ['k'.repeat(65)]: 'v' }]) {
      const { res, json } = await raw(routesById.createGuardedChatCompletion.path, { method: 'POST', body: { ...ask, metadata } });
      expect(res.status).toBe(422);
      expect(json.detail.some((d: Json) => d.loc.join('.').startsWith('body.metadata'))).toBe(true);
    }
    const { res } = await raw(routesById.createGuardedChatCompletion.path, { method: 'POST', body: { ...ask, metadata: { ['k'.repeat(64)]: 'v'.repeat(512) } } });
    expect(res.status).toBe(200);
  });

  it('refuses an invalid stream request the same way, before streaming', async () => {
    const { res, json } = await raw(routesById.createGuardedChatCompletion.path, { method: 'POST', body: { auto_routing: true, stream: true } });
    expect(res.status).toBe(422);
    expect(json.trace_id).toMatch(TRACE_ID);
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
  });

  it('answers an unknown example name itself (front-server error) with the known names and a trace id', async () => {
    const { res, json } = await raw(routesById.createGuardedChatCompletion.path, {
      method: 'POST',
      body: sdkOptions(routesById.createGuardedChatCompletion).body,
      headers: { Prefer: 'example=no_such_example' },
    });
    expect(res.status).toBe(404);
    expect(contractProblems('createGuardedChatCompletion', 400, json)).toEqual([]); // AIError shape
    expect(json.error.message).toContain('no_such_example');
    expect(json.trace_id).toMatch(TRACE_ID);
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
  });

  it('keeps a contract error example unchanged and sends its trace id as X-Trace-Id', async () => {
    const route = routesById.getItem;
    const { res, json } = await raw(sampleRequest(route).path, { headers: { Prefer: 'code=404' } });
    expect(json).toEqual(defaultExampleOf(declaredResponse(route, 404).content['application/json']));
    expect(res.headers.get('x-trace-id')).toBe(json.trace_id);
  });

  it('sends a fresh X-Trace-Id with successful answers and streams', async () => {
    const ok = await raw(routesById.listModels.path);
    expect(ok.res.headers.get('x-trace-id')).toMatch(TRACE_ID);
    const body = { ...sdkOptions(routesById.createGuardedChatCompletion).body, stream: true };
    const streamed = await raw(routesById.createGuardedChatCompletion.path, { method: 'POST', body });
    expect(streamed.res.headers.get('content-type')).toBe('text/event-stream');
    expect(streamed.res.headers.get('x-trace-id')).toMatch(TRACE_ID);
  });
});

describe('include_citations on grounded completions (issue 9)', () => {
  const grounded = () => sdkOptions(routesById.createGroundedChatCompletion).body;
  const PATH = routesById.createGroundedChatCompletion.path;

  it('leaves citations out of the JSON answer when include_citations is false or absent', async () => {
    const off = await raw(PATH, { method: 'POST', body: { ...grounded(), include_citations: false } });
    expect(off.res.status).toBe(200);
    expect(off.json).not.toHaveProperty('citations');
    expect(off.json.sources_returned).toBe(true);
    const { include_citations: _dropped, ...withoutFlag } = grounded();
    const absent = await raw(PATH, { method: 'POST', body: withoutFlag });
    expect(absent.json).not.toHaveProperty('citations'); // the contract's default is false
    const on = await raw(PATH, { method: 'POST', body: { ...grounded(), include_citations: true } });
    expect(on.json.citations.length).toBeGreaterThan(0);
  });

  it('leaves the citations event out of the stream when include_citations is false', async () => {
    const off = await raw(PATH, { method: 'POST', body: { ...grounded(), include_citations: false, stream: true } });
    const events = parseSse(off.text);
    expect(events.at(-1)!.data).toBe('[DONE]');
    expect(off.text).not.toContain('citations');
    const full = parseSse(sseExample(routesById.createGroundedChatCompletion));
    expect(events).toEqual(full.filter((e) => !e.data.includes('"citations"')));
    const on = await raw(PATH, { method: 'POST', body: { ...grounded(), include_citations: true, stream: true } });
    expect(parseSse(on.text)).toEqual(full);
  });

  it('does the same on the grounded alias path', async () => {
    const alias = routesById.createGroundedChatCompletionAlias;
    const off = await raw(alias.path, { method: 'POST', body: { ...grounded(), include_citations: false } });
    expect(off.res.status).toBe(200);
    expect(off.json).not.toHaveProperty('citations');
  });
});

describe('uploads (issue 9)', () => {
  const upload = (content: string, name: string, type: string) => {
    const form = new FormData();
    form.append('publisher_id', '6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d');
    form.append('files', new Blob([content], { type }), name);
    return fetch(`${mock.url}${routesById.ingestFiles.path}`, { method: 'POST', body: form, headers: { Authorization: 'Bearer sk_test' } });
  };

  it('accepts a Markdown file (content with #, /, (, ...) on ingestFiles', async () => {
    const res = await upload('# Sabbath rest\n\nSee [notes](https://example.org/a?b=c&d=e) — rest, (received) #1!\n', 'sabbath.md', 'text/markdown');
    expect(res.headers.get('sl-violations')).toBeNull();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(defaultExampleOf(declaredResponse(routesById.ingestFiles, 200).content['application/json']));
  });

  it('accepts a Markdown file through the SDK, with a second file', async () => {
    const body = {
      publisher_id: '6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d',
      files: [new Blob(['# One\n'], { type: 'text/markdown' }), new Blob(['## Two, with a / slash\n'], { type: 'text/markdown' })],
    };
    const { response } = await call(sdk(), 'ingestFiles', { body });
    expect(response.headers.get('sl-violations')).toBeNull();
    expect(response.status).toBe(200);
  });

  it('still refuses an upload without files', async () => {
    const form = new FormData();
    form.append('publisher_id', '6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d');
    const res = await fetch(`${mock.url}${routesById.ingestFiles.path}`, { method: 'POST', body: form, headers: { Authorization: 'Bearer sk_test' } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect((await res.json()).trace_id).toMatch(TRACE_ID);
  });
});

describe('Prism errors without a trace id (issue 9)', () => {
  it('answers a malformed JSON body in the operation\'s error shape with a trace id', async () => {
    const res = await fetch(`${mock.url}${routesById.createGuardedChatCompletion.path}`, {
      method: 'POST',
      headers: { Authorization: 'Bearer sk_test', 'Content-Type': 'application/json' },
      body: '{not json',
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(contractProblems('createGuardedChatCompletion', 400, body)).toEqual([]);
    expect(body.trace_id).toMatch(TRACE_ID);
    expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
  });
});

describe('Retry-After (issue 9)', () => {
  /** Every (operation, 429 response) whose 429 can be SPENDING_LIMIT_EXCEEDED (1005). */
  const spendingLimit429s = routes.flatMap((route) => {
    const response = contractDocument.paths[route.path][route.method].responses['429'];
    if (!response) return [];
    const resolved = resolve(response);
    const named = Object.values<Json>(resolved.content['application/json'].examples).map((e) => resolve(e).value);
    return named.some((v) => (v.error?.name ?? v.detail?.name ?? JSON.stringify(v)).includes('SPENDING_LIMIT_EXCEEDED')) ? [{ route, resolved }] : [];
  });

  it('a 429 that can be the spending limit has a retryable default example and no mandatory Retry-After', () => {
    expect(spendingLimit429s.length).toBeGreaterThan(10);
    for (const { route, resolved } of spendingLimit429s) {
      const body = defaultExampleOf(resolved.content['application/json']);
      expect(JSON.stringify(body), route.operationId).not.toContain('SPENDING_LIMIT_EXCEEDED');
      if (body.error?.retryable !== undefined) expect(body.error.retryable, route.operationId).toBe(true);
      const retryAfter = resolved.headers?.['Retry-After'];
      if (retryAfter) expect(resolve(retryAfter).required ?? false, route.operationId).toBe(false);
    }
  });

  it("plain Prism's default 429 is the retryable one, so the Retry-After it always sends is true", async () => {
    const route = routesById.createGuardedChatCompletion;
    const res = await fetch(`${mock.prismUrl}${route.path}`, {
      method: 'POST',
      headers: { Authorization: 'Bearer sk_test', 'Content-Type': 'application/json', Prefer: 'code=429' },
      body: JSON.stringify(sdkOptions(route).body),
    });
    expect(res.status).toBe(429);
    expect((await res.json()).error).toMatchObject({ name: 'QUOTA_EXCEEDED', retryable: true });
    expect(res.headers.get('retry-after')).not.toBeNull();
  });

  it('sends no Retry-After with the non-retryable spending limit, and one with the default quota answer', async () => {
    const ask = (prefer: string) =>
      raw(routesById.createGuardedChatCompletion.path, { method: 'POST', body: sdkOptions(routesById.createGuardedChatCompletion).body, headers: { Prefer: prefer } });
    const spending = await ask('code=429, example=spending_limit_exceeded');
    expect(spending.res.status).toBe(429);
    expect(spending.json.error).toMatchObject({ name: 'SPENDING_LIMIT_EXCEEDED', retryable: false });
    expect(spending.res.headers.get('retry-after')).toBeNull();
    const quota = await ask('code=429');
    expect(quota.json.error.retryable).toBe(true);
    expect(quota.res.headers.get('retry-after')).not.toBeNull();
  });
});
