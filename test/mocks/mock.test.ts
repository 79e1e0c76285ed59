// The mock (`npm run mock`) answers every operation of the contract with the contract's own
// example, called through the SDK, and streams the SSE examples event by event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createConfig } from '../../generated/client/client/index.js';
import { PlatformApi } from '../../generated/client/index.js';
import { routes, routesById, type OperationId, type RouteDefinition } from '../../generated/contract/routes.js';
import { startMock, type RunningMock } from '../../mocks/serve.js';
import { deref } from '../../scripts/codegen/contract.js';
import { Platform } from '../../sdk/src/index.js';
import { contractDocument } from '../support/contract.js';
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
    expect(data).toEqual((declared.content['application/json'] ?? declared.content['text/plain']).example);
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
const sseExample = (route: RouteDefinition): string => declaredResponse(route, 200).content['text/event-stream'].example;

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
    expect(error).toEqual(declaredResponse(route, 401).content['application/json'].example);
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
    expect(error).toEqual(declaredResponse(route, 401).content['application/json'].example);
  });

  it('answers a management call without Authorization with the management 401', async () => {
    const route = routesById.listKeys;
    const { error, response } = await call(sdk(null), 'listKeys', {});
    expect(response.status).toBe(401);
    expect(error).toEqual(declaredResponse(route, 401).content['application/json'].example);
  });

  it('passes Prefer: code=404 through to pick a declared error example', async () => {
    const route = routesById.getItem;
    const { error, response } = await call(sdk(), 'getItem', { ...sdkOptions(route), headers: { Prefer: 'code=404' } });
    expect(response.status).toBe(404);
    expect(error).toEqual(declaredResponse(route, 404).content['application/json'].example);
  });

  it('answers an undeclared path with 404', async () => {
    const res = await fetch(`${mock.url}/no/such/path`, { headers: { Authorization: 'Bearer sk_test' } });
    expect(res.status).toBe(404);
  });
});
