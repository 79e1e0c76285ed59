// The SDK as its users meet it (issue 13): resource namespaces generated from the contract,
// JSDoc on every method, a curated export list, stream helpers, raw responses, and
// configuration / failure messages.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { clientRoutesById } from '../../generated/contract/client-routes.js';
import { paginatedOperations, resourceMethods } from '../../generated/sdk/methods.js';
import { loadContract } from '../../scripts/codegen/contract.js';
import { generateSdkResources } from '../../scripts/codegen/sdk-resources.js';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIPromise,
  BadRequestError,
  ChatCompletionStream,
  PagePromise,
  Platform,
  PlatformError,
  ResponseStream,
  ServiceUnavailableError,
  VERSION,
  type ChatCompletion,
  type ChatCompletionCreateParamsNonStreaming,
} from '../../sdk/src/index.js';
import { aiError, startFaultServer, type FaultServer } from './support/fault-server.js';
import { chat, until } from './support/helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');
const MAP_FILE = join(ROOT, 'scripts/codegen/sdk-resources.map.json');

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

const logger = () => ({ warn: vi.fn<(message: string) => void>() });
const client = (options: ConstructorParameters<typeof Platform>[0] = {}) =>
  new Platform({ apiKey: 'sk_live', baseUrl: api.url, managementBaseUrl: mgmt.url, logger: logger(), retry: { initialDelayMs: 1 }, ...options });
const completion = { id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
const health = { data: { status: 'healthy', gateways: [] }, meta: { requestId: 'r' } };
const agentBody = (id: string) => ({ data: { id, name: 'A' }, meta: { requestId: 'r' } });

// ---------------------------------------------------------------- 1. resource namespaces

describe('resource namespaces', () => {
  it('place every canonical operation, never a deprecated operation or an alias', () => {
    const placed = new Set(resourceMethods.map(([, id]) => id));
    const contract = loadContract(join(ROOT, 'openapi.yaml'));
    for (const op of contract.operations) {
      const alias = contract.document.paths[op.path][op.method]['x-alias-of'];
      expect(placed.has(op.operationId), op.operationId).toBe(!op.deprecated && !alias);
    }
    for (const [, id] of resourceMethods) expect(clientRoutesById[id as keyof typeof clientRoutesById].deprecated, id).toBe(false);
  });

  it('read like the product', () => {
    const at = Object.fromEntries(resourceMethods.map(([place, id]) => [place, id]));
    expect(at).toMatchObject({
      'chat.completions.create': 'createGuardedChatCompletion',
      'responses.create': 'createResponse',
      'embeddings.create': 'createEmbeddings',
      'models.list': 'listModels',
      'files.upload': 'ingestFiles',
      'files.get': 'getFile',
      'items.get': 'getItem',
      'items.update': 'patchItem',
      'items.updateMany': 'patchItems',
      'items.delete': 'deleteItems',
      'items.listByPublisher': 'listPublisherItems',
      'items.byProducer': 'getItemsByProducer',
      'search.query': 'searchCollection',
      'recommendations.list': 'getRecommendations',
      'grounded.chat.create': 'createGroundedChatCompletion',
      'grounded.responses.create': 'createGroundedResponse',
      'coding.chat.completions.create': 'createCodingChatCompletion',
      'management.keys.create': 'createKey',
      'management.keys.list': 'listKeys',
      'management.keys.get': 'getKey',
      'management.keys.revoke': 'revokeKey',
      'management.agents.list': 'listAgents',
      'management.agents.get': 'getAgent',
      'management.agents.create': 'createAgent',
      'management.agents.update': 'updateAgent',
      'management.agents.delete': 'deleteAgent',
      'management.health': 'getHealth',
      'management.metrics': 'getMetrics',
      'management.gateway.deployments': 'listGatewayDeployments',
    });
  });

  it('call the canonical paths: path parameters first, then the body, then the query, then options', async () => {
    api.script('POST /ai/v2/guarded/chat/completions', { status: 200, body: completion });
    api.script('POST /ai/v2/code-assist/chat/completions', { status: 200, body: completion });
    api.script('PATCH /engine/v2/items', { status: 200, body: { updated: 1 } });
    mgmt.script('GET /api/v1/agents/agt_1', { status: 200, body: agentBody('agt_1') });
    mgmt.script('PATCH /api/v1/agents/agt_1', { status: 200, body: agentBody('agt_1') });
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    // Responses, embeddings, grounded and search: each namespace on its canonical path.
    const response = { id: 'resp_1', object: 'response', status: 'completed', output: [], output_text: 'ok' };
    api.script(`POST ${clientRoutesById.createResponse.path}`, { status: 200, body: response });
    api.script(`POST ${clientRoutesById.createEmbeddings.path}`, { status: 200, body: { object: 'list', data: [], model: 'e', usage: { prompt_tokens: 1, total_tokens: 1 } } });
    api.script(`POST ${clientRoutesById.createGroundedChatCompletion.path}`, { status: 200, body: completion });
    api.script(`POST ${clientRoutesById.createGroundedResponse.path}`, { status: 200, body: response });
    api.script(`POST ${clientRoutesById.searchCollection.path}`, { status: 200, body: { data: [], intent: null } });
    const log = logger();
    const platform = client({ logger: log });

    const params: ChatCompletionCreateParamsNonStreaming = chat;
    const answer: ChatCompletion = await platform.chat.completions.create(params);
    expect(answer).toEqual(completion);
    await platform.coding.chat.completions.create('code-assist', chat, { headers: { 'X-Test': 'coding' } });
    await platform.items.updateMany({ items: [] } as never, { publisher_id: 'pub_1' });
    const agent = await platform.management.agents.get('agt_1');
    expect(agent.data.id).toBe('agt_1');
    await platform.management.agents.update('agt_1', { status: 'inactive' });
    await expect(platform.management.health()).resolves.toEqual(health);
    await expect(platform.responses.create({ input: 'Hello', auto_routing: true })).resolves.toMatchObject({ object: 'response' });
    await platform.embeddings.create({ model: 'local-embedding', input: ['a', 'b'] });
    await platform.grounded.chat.create({ ...chat, rag_publisher: 'pub_1' });
    await platform.grounded.responses.create({ input: 'Hello', auto_routing: true, rag_publisher: 'pub_1' });
    await platform.search.query({ query: 'hope', collection: 'GlooProd', limit: 3 });

    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /ai/v2/guarded/chat/completions',
      'POST /ai/v2/code-assist/chat/completions',
      'PATCH /engine/v2/items?publisher_id=pub_1',
      'POST /ai/v2/guarded/responses',
      'POST /ai/v2/direct/embeddings',
      'POST /ai/v2/grounded/chat/completions',
      'POST /ai/v1/grounded/responses',
      'POST /ai/v1/data/search',
    ]);
    expect(JSON.parse(api.requests[4]!.body)).toEqual({ model: 'local-embedding', input: ['a', 'b'] });
    expect(JSON.parse(api.requests[7]!.body)).toEqual({ query: 'hope', collection: 'GlooProd', limit: 3 });
    expect(api.requests[1]!.headers['x-test']).toBe('coding');
    expect(JSON.parse(api.requests[0]!.body)).toEqual(chat);
    expect(mgmt.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /api/v1/agents/agt_1', 'PATCH /api/v1/agents/agt_1', 'GET /api/v1/health']);
    expect(JSON.parse(mgmt.requests[1]!.body)).toEqual({ status: 'inactive' });
    expect(log.warn).not.toHaveBeenCalled(); // no deprecated alias on the way
  });

  it('reject (never throw) a missing path parameter, naming it', async () => {
    const call = (client().management.agents.get as (id?: string) => Promise<unknown>)();
    expect(call).toBeInstanceOf(APIPromise);
    await expect(call).rejects.toThrow(/client\.management\.agents\.get\(\): the path parameter agent_id is missing/);
    expect(mgmt.requests).toHaveLength(0);
  });

  it('keep the flat operationId methods as the low-level surface', async () => {
    mgmt.script('GET /api/v1/agents/agt_2', { status: 200, body: agentBody('agt_2') });
    await client().getAgent({ path: { agent_id: 'agt_2' } });
    expect(mgmt.requests[0]!.path).toBe('/api/v1/agents/agt_2');
  });
});

describe('the resource generator', () => {
  const contract = loadContract(join(ROOT, 'openapi.yaml'));
  const map = JSON.parse(readFileSync(MAP_FILE, 'utf8'));
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sdk-resources-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (changed: unknown) => {
    const file = join(dir, 'map.json');
    writeFileSync(file, JSON.stringify(changed));
    const log: string[] = [];
    generateSdkResources(contract, { generatedDir: dir, mapFile: file, log: (line) => log.push(line) });
    const read = (file: string) => readFileSync(join(dir, 'sdk', file), 'utf8');
    return { log, methods: read('methods.ts'), resources: read('resources.ts'), types: read('types.ts') };
  };

  it('gives an unmapped operation a default place by tag, and says so', () => {
    const { getMetrics: _dropped, ...operations } = map.operations;
    const before = run(map).log;
    const { log, methods, resources, types } = run({ ...map, operations });
    expect(log.filter((line) => !before.includes(line))).toEqual(['sdk-resources: getMetrics is not in the mapping; placed at client.management.getMetrics']);
    expect(methods).toContain('["management.getMetrics", "getMetrics", [], 0, 0]');
    expect(resources).toContain('getMetrics(options?: RequestOptions): APIPromise<GetMetricsResponse>;');
    expect(types).toContain('export type GetMetricsResponse = DataOf<"getMetrics">;');
  });

  it('names every placed body, query and answer, and fails on a name given twice', () => {
    const { types } = run(map);
    expect(types).toContain('export type HealthResponse = DataOf<"getHealth">;'); // the answer's schema name
    expect(types).toContain('export type AgentCreateParams = BodyOf<"createAgent">;'); // the mapping's
    expect(types).toContain('  Response as ResponseObject,'); // renamed: the DOM has a Response
    expect(types.match(/export type KeyResponse =/g)).toHaveLength(1); // getKey and revokeKey share their schema
    const named = (id: string, names: Record<string, string>) => ({ ...map, operations: { ...map.operations, [id]: { ...map.operations[id], ...names } } });
    expect(() => run(named('createAgent', { params: 'AgentUpdateParams' }))).toThrow(/type name 'AgentUpdateParams' is taken twice/);
    expect(() => run(named('getMetrics', { response: 'Item' }))).toThrow(/type name 'Item' is taken twice \(.* and the answer of getMetrics\)/);
    expect(() => run(named('getHealth', { query: 'HealthQuery' }))).toThrow(/'getHealth' has no query/);
  });

  it('fails loudly on a mapping of an unknown, deprecated or alias operation, or a collision', () => {
    expect(() => run({ ...map, operations: { ...map.operations, noSuchOp: { at: 'x.y' } } })).toThrow(/'noSuchOp' is not an operationId/);
    expect(() => run({ ...map, operations: { ...map.operations, createResponseV1: { at: 'responses.createV1' } } })).toThrow(/'createResponseV1' is deprecated/);
    expect(() => run({ ...map, operations: { ...map.operations, createEmbeddingsAlias: { at: 'embeddings.alias' } } })).toThrow(/alias of createEmbeddings/);
    expect(() => run({ ...map, operations: { ...map.operations, getMetrics: { at: 'management.health' } } })).toThrow(/taken twice/);
    expect(() => run({ ...map, operations: { ...map.operations, getMetrics: { at: 'management.health.metrics' } } })).toThrow(/both a method .* and a namespace/);
  });

  it('writes the same files as the committed generated/sdk (deterministic, up to date)', () => {
    run(map);
    for (const file of ['methods.ts', 'resources.ts', 'types.ts']) {
      expect(readFileSync(join(dir, 'sdk', file), 'utf8'), file).toBe(readFileSync(join(ROOT, 'generated', 'sdk', file), 'utf8'));
    }
  });
});

// ---------------------------------------------------------------- 4. stream helpers

const toolChunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] },
});

describe('stream helpers', () => {
  it('collect() and finalMessage() assemble tool calls, text and refusals', async () => {
    api.script('POST /ai/v2/guarded/chat/completions', {
      sse: [
        toolChunk({ role: 'assistant', content: 'Let me check. ' }),
        toolChunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        toolChunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":' } }] }),
        toolChunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        toolChunk({ tool_calls: [{ index: 0, function: { arguments: '"Lisbon"}' } }] }),
        toolChunk({ tool_calls: [{ index: 1, function: { arguments: '"UTC"}' } }] }),
        toolChunk({ refusal: 'No ' }),
        toolChunk({ refusal: 'secrets.' }, 'tool_calls'),
        { data: '[DONE]' },
      ],
    });
    const stream = await client().chat.completions.create({ ...chat, stream: true });
    const result = await stream.collect();
    expect(result.finishReason).toBe('tool_calls');
    expect(result.toolCalls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
    ]);
    expect(result.refusal).toBe('No secrets.');
    await expect(stream.finalMessage()).resolves.toEqual({ role: 'assistant', content: 'Let me check. ', refusal: 'No secrets.', tool_calls: result.toolCalls });
  });

  it('keeps a tool-call name that the provider repeats on later deltas (assigned, not concatenated)', async () => {
    const call = (args: string) => toolChunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } }] });
    api.script('POST /ai/v2/guarded/chat/completions', { sse: [call('{"city":'), call('"Lisbon"}'), toolChunk({}, 'tool_calls'), { data: '[DONE]' }] });
    const result = await (await client().chat.completions.create({ ...chat, stream: true })).collect();
    expect(result.toolCalls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } }]);
  });

  it('ResponseStream.collect() gives the function calls, refusals and citations', async () => {
    const call = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'lookup', arguments: '', status: 'in_progress' };
    const named = (type: string, data: Record<string, unknown>, n: number) => ({ event: type, data: { type, sequence_number: n, ...data } });
    api.script('POST /ai/v1/grounded/responses', {
      sse: [
        named('response.output_item.added', { output_index: 0, item: call }, 0),
        named('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta: '{"q":' }, 1),
        named('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta: '"rest"}' }, 2),
        named('response.output_item.added', { output_index: 1, item: { type: 'message', id: 'm1', role: 'assistant', status: 'completed', content: [{ type: 'refusal', refusal: 'Cannot.' }] } }, 3),
      ],
    });
    const stream = await client().grounded.responses.create({ model: 'm', input: 'x', rag_publisher: 'P', stream: true });
    const result = await stream.collect();
    expect(result.toolCalls).toEqual([{ ...call, arguments: '{"q":"rest"}' }]);
    expect(result.refusal).toBe('Cannot.');

    const citations = [{ item_id: 'i', title: 'T', publisher: 'P', url: null, snippet: 's', certainty: 0.9 }];
    const response = { id: 'r', object: 'response', created_at: 1, status: 'completed', model: 'm', output: [], output_text: 'ok', incomplete_details: null, error: null, usage: null, sources_returned: true, citations };
    api.script('POST /ai/v1/grounded/responses', { sse: [named('response.completed', { response }, 0)] });
    const grounded = await client().grounded.responses.create({ model: 'm', input: 'x', rag_publisher: 'P', stream: true });
    await expect(grounded.collect()).resolves.toMatchObject({ citations, text: 'ok' });
  });

  it('toReadableStream() hands the events on as NDJSON, and cancelling it aborts the request', async () => {
    api.script('POST /ai/v2/guarded/chat/completions', { sse: [toolChunk({ content: 'a' }), toolChunk({ content: 'b' }, 'stop'), { data: '[DONE]' }] });
    const stream = await client().chat.completions.create({ ...chat, stream: true });
    const text = await new Response(stream.toReadableStream()).text();
    expect(text.trimEnd().split('\n').map((line) => JSON.parse(line).choices[0].delta.content)).toEqual(['a', 'b']);

    api.script('POST /ai/v2/guarded/chat/completions', { sse: [toolChunk({ content: 'a' }), { pauseMs: 5000 }, toolChunk({ content: 'b' }, 'stop')] });
    const slow = await client().chat.completions.create({ ...chat, stream: true });
    const reader = slow.toReadableStream().getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('"a"');
    await reader.cancel();
    expect(slow.finished).toBe(true);
  });

  it('fromReadableStream() reads what toReadableStream() wrote, with the same helpers; leaving it cancels the source', async () => {
    const sse = [
      toolChunk({ role: 'assistant', content: 'Checking. ' }),
      toolChunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }),
      toolChunk({ tool_calls: [{ index: 0, function: { arguments: '"Lisbon"}' } }] }, 'tool_calls'),
      { data: '[DONE]' },
    ];
    api.script('POST /ai/v2/guarded/chat/completions', { sse });
    const direct = await (await client().chat.completions.create({ ...chat, stream: true })).collect();
    api.script('POST /ai/v2/guarded/chat/completions', { sse });
    const source = await client().chat.completions.create({ ...chat, stream: true });
    // Across a web boundary: a backend answers with the NDJSON, the frontend reads its body.
    const answer = new Response(source.toReadableStream(), { headers: { 'content-type': 'application/x-ndjson' } });
    const rebuilt = ChatCompletionStream.fromReadableStream(answer.body!);
    expect(rebuilt).toBeInstanceOf(ChatCompletionStream);
    const result = await rebuilt.collect();
    expect(result).toMatchObject({ text: 'Checking. ', finishReason: 'tool_calls', toolCalls: direct.toolCalls, message: direct.message });
    expect(result.toolCalls).toHaveLength(1);

    const response = { id: 'r', object: 'response', created_at: 1, status: 'completed', model: 'm', output: [], output_text: 'Rest.', incomplete_details: null, error: null, usage: null };
    const lines = [{ type: 'response.output_text.delta', sequence_number: 0, item_id: 'm', output_index: 0, content_index: 0, delta: 'Rest.' }, { type: 'response.completed', sequence_number: 1, response }];
    const ndjson = new Response(lines.map((line) => `${JSON.stringify(line)}\r\n`).join('')).body!;
    const events = ResponseStream.fromReadableStream(ndjson);
    const types: string[] = [];
    for await (const event of events) types.push(event.type);
    expect(types).toEqual(['response.output_text.delta', 'response.completed']);
    await expect(events.finalResponse()).resolves.toMatchObject({ id: 'r', output_text: 'Rest.' });

    api.script('POST /ai/v2/guarded/chat/completions', { sse: [toolChunk({ content: 'a' }), { pauseMs: 5000 }, toolChunk({ content: 'b' }, 'stop')] });
    const slow = await client().chat.completions.create({ ...chat, stream: true });
    for await (const chunk of ChatCompletionStream.fromReadableStream(slow.toReadableStream())) {
      expect('choices' in chunk && chunk.choices[0]?.delta.content).toBe('a');
      break;
    }
    await until(() => slow.finished);
  });
});

// ---------------------------------------------------------------- 5. raw responses and pages

describe('raw responses and pages', () => {
  it('withResponse() gives the Response with its body unread; asResponse() gives it alone', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    const { data, response } = await client().management.health().withResponse();
    expect(data).toEqual(health);
    expect(response.bodyUsed).toBe(false);
    await expect(response.json()).resolves.toEqual(health);

    const raw = await client().management.health().asResponse();
    expect(raw).toBeInstanceOf(Response);
    expect(raw.bodyUsed).toBe(false);
    await expect(raw.json()).resolves.toEqual(health);
  });

  it('only list operations return a page object', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    mgmt.script('GET /api/v1/agents', { status: 200, body: { data: [], meta: { requestId: 'r', hasMore: false, nextCursor: null } } });
    api.script('GET /ai/v2/models', { status: 200, body: { object: 'list', data: [] } });
    const platform = client();
    expect(paginatedOperations).toEqual(['listAgents', 'listIngestionFailures', 'listKeys', 'listPublishers', 'listRequests']);
    const listing = platform.management.agents.list({ limit: 5 });
    expect(listing).toBeInstanceOf(PagePromise);
    const healthCall = platform.management.health();
    expect(healthCall).toBeInstanceOf(APIPromise);
    expect(healthCall).not.toBeInstanceOf(PagePromise);
    const models = platform.models.list();
    const agent = platform.getAgent({ path: { agent_id: 'a' } });
    expect(models).not.toBeInstanceOf(PagePromise);
    expect(agent).not.toBeInstanceOf(PagePromise);
    await Promise.allSettled([listing, healthCall, models, agent]);
  });
});

// ---------------------------------------------------------------- 6. configuration and failures

describe('configuration and failures', () => {
  it('fails at construction without an API key or a base URL, naming the option and the variable', () => {
    vi.stubEnv('PLATFORM_API_KEY', '');
    vi.stubEnv('PLATFORM_BASE_URL', '');
    try {
      expect(() => new Platform({ baseUrl: api.url })).toThrow(/Missing API key: pass `apiKey`.*PLATFORM_API_KEY/);
      expect(() => new Platform({ apiKey: 'sk_x' })).toThrow(/Missing base URL: pass `baseUrl`.*PLATFORM_BASE_URL/);
      expect(() => new Platform({ apiKey: 'sk_x' })).toThrow(PlatformError);
      expect(() => new Platform({ clientCredentials: { clientId: 'c', clientSecret: 's' }, baseUrl: api.url })).not.toThrow();
      expect(() => new Platform({ apiKey: null, baseUrl: api.url })).not.toThrow(); // explicitly no credential
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('checks the base URLs at construction, naming the option or the variable they came from', () => {
    vi.stubEnv('PLATFORM_BASE_URL', '');
    vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', '');
    try {
      for (const bad of ['localhost:8080', 'api.example.com', 'not a url', 'ftp://api.example.com', 'https://api.example.com/?v=1']) {
        expect(() => new Platform({ apiKey: 'sk_x', baseUrl: bad }), bad).toThrow(new RegExp(`Invalid base URL '${bad.replace(/[.?*]/g, '\\$&')}' in \`baseUrl\`: give an absolute http\\(s\\) URL`));
        expect(() => new Platform({ apiKey: 'sk_x', baseUrl: api.url, managementBaseUrl: bad }), bad).toThrow(/in `managementBaseUrl`/);
      }
      vi.stubEnv('PLATFORM_BASE_URL', 'api.example.com');
      expect(() => new Platform({ apiKey: 'sk_x' })).toThrow(/Invalid base URL 'api\.example\.com' in the PLATFORM_BASE_URL environment variable/);
      vi.stubEnv('PLATFORM_BASE_URL', '');
      vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', 'localhost:9000');
      expect(() => new Platform({ apiKey: 'sk_x', baseUrl: api.url })).toThrow(/in the PLATFORM_MANAGEMENT_BASE_URL environment variable/);
      vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', '');
      const prefixed = new Platform({ apiKey: 'sk_x', baseUrl: 'https://gateway.example.com/platform/', managementBaseUrl: 'http://127.0.0.1:9000' });
      expect([prefixed.baseUrl, prefixed.managementBaseUrl]).toEqual(['https://gateway.example.com/platform', 'http://127.0.0.1:9000']);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('needs no management base URL unless a management call is made: that call rejects at once, naming the option and the variable', async () => {
    vi.stubEnv('PLATFORM_MANAGEMENT_BASE_URL', '');
    try {
      const platform = new Platform({ apiKey: 'sk_x', baseUrl: api.url });
      expect(platform.managementBaseUrl).toBe('');
      await expect(platform.management.health()).rejects.toThrow(/getHealth\(\) is a management operation: pass `managementBaseUrl`.*PLATFORM_MANAGEMENT_BASE_URL/);
      expect(api.requests).toHaveLength(0);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('reports a refused connection fast, naming the URL it tried', async () => {
    const closed = http.createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((done) => closed.close(done));
    const retried: string[] = [];
    const started = performance.now();
    const error = await new Platform({ apiKey: 'sk_x', baseUrl: url, onRetry: (e) => retried.push(e.reason) }).models.list().catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as Error).message).toContain(`Could not connect to ${url}/ai/v2/models (ECONNREFUSED)`);
    expect((error as Error).message).toContain('gave up after 3 attempts');
    expect(retried).toHaveLength(2); // retries kept, with short waits
    expect(elapsed).toBeLessThan(2000); // was 15.5 s (1 + 2 + 4 + 8 s backoff)
  });

  it('says which side went quiet on a stream idle timeout', async () => {
    const quiet = [toolChunk({ content: 'a' }), { pauseMs: 3000 }, toolChunk({ content: 'b' }, 'stop')];
    api.script('POST /ai/v2/guarded/chat/completions', { sse: quiet });
    const serverQuiet = await client({ timeout: 150 }).chat.completions.create({ ...chat, stream: true });
    const error = await serverQuiet.collect().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    expect((error as Error).message).toMatch(/the server sent nothing for 150 ms/);

    api.script('POST /ai/v2/guarded/chat/completions', { sse: [toolChunk({ content: 'a' }), toolChunk({ content: 'b' }, 'stop'), { pauseMs: 3000 }, { data: '[DONE]' }] });
    const unread = await client({ timeout: 150 }).chat.completions.create({ ...chat, stream: true });
    await new Promise((done) => setTimeout(done, 400)); // nobody reads
    const late = await unread.collect().catch((e: unknown) => e);
    expect(late).toBeInstanceOf(APIConnectionTimeoutError);
    expect((late as Error).message).toMatch(/the stream was not read for 150 ms \(the client side never started reading/);
  });

  it('client-level maxRetries: 0 also stops stream retries', async () => {
    api.script('POST /ai/v2/guarded/chat/completions', { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true) }, { sse: [toolChunk({ content: 'a' }, 'stop')] });
    await expect(client({ maxRetries: 0 }).chat.completions.create({ ...chat, stream: true })).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(api.requests).toHaveLength(1);
  });

  it('honours x-should-retry: true and false', async () => {
    api.script('POST /ai/v2/guarded/chat/completions', { status: 400, body: { detail: 'try again' }, headers: { 'x-should-retry': 'true' } }, { status: 200, body: completion });
    await expect(client().chat.completions.create(chat)).resolves.toEqual(completion);
    expect(api.requests).toHaveLength(2);

    api.reset();
    api.script('POST /ai/v2/guarded/chat/completions', { status: 503, body: aiError('PROVIDER_UNAVAILABLE', 2002, true), headers: { 'x-should-retry': 'false' } }, { status: 200, body: completion });
    await expect(client().chat.completions.create(chat)).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(api.requests).toHaveLength(1);

    api.reset();
    api.script('POST /ai/v2/guarded/chat/completions', { status: 400, body: { detail: 'bad' } });
    await expect(client().chat.completions.create(chat)).rejects.toBeInstanceOf(BadRequestError);
    expect(api.requests).toHaveLength(1);
  });

  it('sends a User-Agent naming the SDK and its version', async () => {
    mgmt.script('GET /api/v1/health', { status: 200, body: health });
    await client().management.health();
    expect(mgmt.requests[0]!.headers['user-agent']).toBe(`@inference-platform/sdk/${VERSION}`);
    expect(VERSION).toBe(JSON.parse(readFileSync(join(ROOT, 'sdk/package.json'), 'utf8')).version);
  });

  it.each(['document', 'WorkerGlobalScope'])('sends no User-Agent of its own in a browser page or worker (global %s)', async (global) => {
    vi.resetModules();
    vi.stubGlobal(global, class {});
    try {
      const fresh = await import('../../sdk/src/index.js');
      mgmt.script('GET /api/v1/health', { status: 200, body: health });
      await new fresh.Platform({ apiKey: 'sk_live', baseUrl: api.url, managementBaseUrl: mgmt.url }).management.health();
      expect(mgmt.requests[0]!.headers['user-agent']).not.toContain('@inference-platform/sdk');
    } finally {
      vi.unstubAllGlobals();
      vi.resetModules();
    }
  });
});
