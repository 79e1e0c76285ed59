// The OpenAI-compatible adapter against the fake upstream, over real HTTP.
import http from 'node:http';
import { getEventListeners, once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fakeVector, startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { Fault, FakeUpstream } from '../../mocks/upstreams/faults.js';
import { createOpenAICompatibleProvider } from '../../server/providers/openai-compatible.js';
import { ProviderError, type ChatRequest, type ChatStreamEvent, type Provider } from '../../server/providers/types.js';
import { collect, ctx, failure } from './support.js';

const ANSWER = 'The quick brown fox jumps.';
const hello: ChatRequest = { model: 'gpt-test', messages: [{ role: 'user', content: 'Say hello' }] };

const text = (events: ChatStreamEvent[]) => events.map((e) => (e.type === 'delta' ? (e.content ?? '') : '')).join('');

let up: FakeUpstream;
let provider: Provider;

beforeAll(async () => {
  up = await startFakeOpenAI({ answer: ANSWER, apiKey: 'sk-test' });
  provider = createOpenAICompatibleProvider({ id: 'openai-fake', baseUrl: `${up.url}/v1`, apiKey: 'sk-test', headers: { 'x-extra': '1' } });
});
afterAll(async () => {
  await provider.close();
  await up.close();
});
afterEach(() => {
  up.faults.clear();
  up.requests.length = 0;
  up.config.chunkIntervalMs = 0;
});

describe('chat', () => {
  it('sends the mapped request and returns content, finish reason and usage', async () => {
    const result = await provider.chat(
      { ...hello, maxTokens: 50, temperature: 0.3, topP: 0.9, stop: ['END'], user: 'u1', responseFormat: { type: 'json_object' } },
      ctx(),
    );
    expect(result).toEqual({ content: ANSWER, finishReason: 'stop', usage: { promptTokens: 2, completionTokens: 5 } });
    const [req] = up.requests;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test');
    expect(req.headers['x-extra']).toBe('1');
    expect(req.body).toEqual({
      model: 'gpt-test',
      messages: hello.messages,
      max_tokens: 50,
      temperature: 0.3,
      top_p: 0.9,
      stop: ['END'],
      user: 'u1',
      response_format: { type: 'json_object' },
    });
  });

  it('reuses keep-alive connections across calls', async () => {
    for (let i = 0; i < 8; i++) await provider.chat(hello, ctx());
    expect(up.requests).toHaveLength(8);
    // undici may open a second socket when a call starts on the tick the previous one ends.
    expect(new Set(up.requests.map((r) => r.remotePort)).size).toBeLessThanOrEqual(2);
  });

  it('asks vLLM to continue a prefix with continue_final_message and add_generation_prompt false', async () => {
    const result = await provider.chat({ ...hello, assistantPrefix: { text: 'The quick', mode: 'vllm' } }, ctx());
    expect(result.content).toBe(' brown fox jumps.');
    const { body } = up.requests[0];
    expect(body.messages.at(-1)).toEqual({ role: 'assistant', content: 'The quick' });
    expect([body.continue_final_message, body.add_generation_prompt]).toEqual([true, false]);
  });

  it('asks Mistral and DeepSeek to continue a prefix with prefix: true on the message', async () => {
    const result = await provider.chat({ ...hello, assistantPrefix: { text: 'The quick', mode: 'mistral' } }, ctx());
    expect(result.content).toBe(' brown fox jumps.');
    const { body } = up.requests[0];
    expect(body.messages.at(-1)).toEqual({ role: 'assistant', content: 'The quick', prefix: true });
    expect(body).not.toHaveProperty('continue_final_message');
  });

  it('never sends a prefix to an upstream that cannot continue one (mode none)', async () => {
    const error = await failure(provider.chat({ ...hello, assistantPrefix: { text: 'The quick', mode: 'none' } }, ctx()));
    expect(error.kind).toBe('prefix_refused');
    expect((await failure(collect(provider.chatStream({ ...hello, assistantPrefix: { text: 'The quick', mode: 'none' } }, ctx())))).kind).toBe('prefix_refused');
    expect(up.requests).toHaveLength(0);
  });

  it('the fake answers a plain trailing assistant message afresh, as OpenAI does', async () => {
    const result = await provider.chat({ ...hello, assistantPrefix: { text: 'The quick', mode: 'native' } }, ctx());
    expect(result.content).toBe(ANSWER);
    expect(up.requests[0].body.messages.at(-1)).toEqual({ role: 'assistant', content: 'The quick' });
  });
});

describe('chatStream', () => {
  it('yields deltas as they arrive, then one finish with the usage sent after finish_reason', async () => {
    up.config.chunkIntervalMs = 30;
    const events: ChatStreamEvent[] = [];
    let completedAtFirstDelta: boolean | undefined;
    let firstDeltaAt = 0n;
    for await (const event of provider.chatStream(hello, ctx())) {
      if (events.length === 0) {
        completedAtFirstDelta = up.requests[0].completed;
        firstDeltaAt = process.hrtime.bigint();
      }
      events.push(event);
    }
    expect(completedAtFirstDelta).toBe(false);
    // The fake stamps its first frame on the clock the bench times first bytes against.
    expect(up.requests[0].firstFrameAt).toBeGreaterThan(0n);
    expect(up.requests[0].firstFrameAt).toBeLessThan(firstDeltaAt);
    expect(events.map((e) => e.type)).toEqual(['delta', 'delta', 'delta', 'delta', 'delta', 'finish']);
    expect(text(events)).toBe(ANSWER);
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { promptTokens: 2, completionTokens: 5 } });
    expect(up.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('maps finish_reason content_filter to a normal finish', async () => {
    up.faults.push({ type: 'content_filter_finish' });
    const events = await collect(provider.chatStream(hello, ctx()));
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'content_filter' });
  });
});

describe('tools', () => {
  const tools: ChatRequest = {
    ...hello,
    tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } } }],
    toolChoice: 'required',
    parallelToolCalls: false,
  };

  it('sends tools and returns the tool call', async () => {
    const result = await provider.chat(tools, ctx());
    expect(up.requests[0].body).toMatchObject({ tools: tools.tools, tool_choice: 'required', parallel_tool_calls: false });
    expect(result.finishReason).toBe('tool_calls');
    expect(result.content).toBeNull();
    expect(result.toolCalls).toEqual([{ id: 'call_fake_1', type: 'function', function: { name: 'lookup', arguments: '{"input":"Say hello"}' } }]);
  });

  it('streams tool call deltas', async () => {
    const events = await collect(provider.chatStream({ ...tools, toolChoice: { type: 'function', function: { name: 'lookup' } } }, ctx()));
    const deltas = events.flatMap((e) => (e.type === 'delta' ? (e.toolCalls ?? []) : []));
    expect(deltas[0]).toEqual({ index: 0, id: 'call_fake_1', type: 'function', function: { name: 'lookup', arguments: '' } });
    expect(deltas.map((d) => d.function?.arguments).join('')).toBe('{"input":"Say hello"}');
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool_calls' });
  });
});

describe('faults', () => {
  const cases: [string, Fault, ProviderError['kind'], Partial<ProviderError['details']>][] = [
    ['429 with Retry-After', { type: 'rate_limit', retryAfter: '2' }, 'rate_limit', { status: 429, retryAfterMs: 2000 }],
    ['429 without Retry-After', { type: 'rate_limit' }, 'rate_limit', { status: 429, retryAfterMs: undefined }],
    ['500', { type: 'server_error' }, 'server', { status: 500 }],
    ['503', { type: 'unavailable' }, 'unavailable', { status: 503 }],
    ['401', { type: 'bad_key' }, 'auth', { status: 401 }],
    ['context length', { type: 'context_length' }, 'context_length', { status: 400 }],
    ['content filter', { type: 'content_filter' }, 'content_filter', { status: 400 }],
    ['reset before headers', { type: 'reset' }, 'unavailable', {}],
    ['no answer', { type: 'hang' }, 'timeout', { timeout: 'connect' }],
    ['stream cut', { type: 'cut', afterChunks: 2 }, 'connection_dropped', {}],
    ['stream stall', { type: 'stall', afterChunks: 2 }, 'timeout', { timeout: 'idle' }],
    ['slow first token', { type: 'slow_first_token', ms: 1000 }, 'timeout', { timeout: 'first_token' }],
    ['malformed chunk', { type: 'malformed', afterChunks: 2 }, 'malformed_stream', {}],
    ['no [DONE]', { type: 'no_done' }, 'connection_dropped', {}],
    ['in-stream rate limit', { type: 'stream_error', error: 'rate_limit' }, 'rate_limit', {}],
    ['in-stream overload', { type: 'stream_error', error: 'overloaded', afterChunks: 3 }, 'unavailable', {}],
    // Pings every 50 ms: the first-token and idle deadlines (200 ms) must not take them for tokens.
    ['opening events and pings, never a token', { type: 'no_tokens', pingEveryMs: 50 }, 'timeout', { timeout: 'first_token' }],
    ['a stall kept alive by pings', { type: 'stall', afterChunks: 3, pingEveryMs: 50 }, 'timeout', { timeout: 'idle' }],
    ['in-stream auth error', { type: 'stream_error', error: 'auth' }, 'auth', {}],
    ['in-stream bad request', { type: 'stream_error', error: 'bad_request' }, 'bad_request', {}],
  ];

  it.each(cases)('%s', async (_name, fault, kind, details) => {
    up.faults.push(fault);
    const err = await failure(collect(provider.chatStream(hello, ctx())));
    expect(err.kind).toBe(kind);
    expect(err.details).toMatchObject(details);
  });

  it('a standing fault applies to every call until cleared', async () => {
    up.faults.always({ type: 'unavailable' });
    expect((await failure(provider.chat(hello, ctx()))).kind).toBe('unavailable');
    expect((await failure(provider.chat(hello, ctx()))).kind).toBe('unavailable');
    up.faults.clear();
    expect((await provider.chat(hello, ctx())).content).toBe(ANSWER);
  });

  it('a refused assistant prefix is prefix_refused, without a prefix the call succeeds', async () => {
    up.faults.always({ type: 'refuse_prefix' });
    const assistantPrefix = { text: 'The', mode: 'vllm' } as const;
    expect((await failure(collect(provider.chatStream({ ...hello, assistantPrefix }, ctx())))).kind).toBe('prefix_refused');
    expect((await failure(provider.chat({ ...hello, assistantPrefix }, ctx()))).kind).toBe('prefix_refused');
    expect((await provider.chat(hello, ctx())).content).toBe(ANSWER);
  });

  it('non-stream chat uses firstTokenMs as the whole-answer deadline', async () => {
    up.faults.push({ type: 'slow_first_token', ms: 1000 });
    const err = await failure(provider.chat(hello, ctx()));
    expect(err.details.timeout).toBe('first_token');
  });

  it('abort cancels the upstream request', async () => {
    up.config.chunkIntervalMs = 50;
    const controller = new AbortController();
    const reason = new Error('client left');
    const events = provider.chatStream(hello, ctx(controller.signal))[Symbol.asyncIterator]();
    expect((await events.next()).value).toEqual({ type: 'delta', content: 'The' });
    controller.abort(reason);
    await expect(events.next()).rejects.toBe(reason);
    await up.requests[0].closed;
    expect(up.requests[0].completed).toBe(false);
  });

  it('abort cancels a plain (whole-answer) call upstream, rejecting with the caller\'s reason', async () => {
    up.faults.push({ type: 'hang' });
    const controller = new AbortController();
    const reason = new Error('client left');
    const call = provider.chat(hello, ctx(controller.signal));
    await expect.poll(() => up.requests.length, { interval: 5 }).toBe(1);
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    await up.requests[0].closed;
    expect(up.requests[0].completed).toBe(false);
  });

  it('a call whose caller has already left fails at once with its reason and sends nothing', async () => {
    const controller = new AbortController();
    const reason = new Error('client left');
    controller.abort(reason);
    await expect(provider.chat(hello, ctx(controller.signal))).rejects.toBe(reason);
    await expect(collect(provider.chatStream(hello, ctx(controller.signal)))).rejects.toBe(reason);
    expect(up.requests).toHaveLength(0);
  });

  it('a caller signal that outlives its calls keeps no listener, however each call ended', async () => {
    // A worker's signal spans many calls: each call's link to it must go when the call ends.
    const worker = new AbortController().signal;
    await provider.chat(hello, ctx(worker));
    up.faults.push({ type: 'server_error' });
    await failure(provider.chat(hello, ctx(worker)));
    up.faults.push({ type: 'hang' });
    await failure(provider.chat(hello, ctx(worker)));
    await collect(provider.chatStream(hello, ctx(worker)));
    up.faults.push({ type: 'cut', afterChunks: 2 });
    await failure(collect(provider.chatStream(hello, ctx(worker))));
    up.faults.push({ type: 'reset' });
    await failure(collect(provider.chatStream(hello, ctx(worker))));
    for await (const _event of provider.chatStream(hello, ctx(worker))) break;
    await provider.embed({ model: 'text-embedding-test', input: ['a'] }, ctx(worker));
    expect(getEventListeners(worker, 'abort')).toHaveLength(0);
  });

  it('connection refused is unavailable', async () => {
    const closed = http.createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    await once(closed, 'close');
    const dead = createOpenAICompatibleProvider({ id: 'dead', baseUrl: `http://127.0.0.1:${port}/v1` });
    expect((await failure(dead.chat(hello, ctx()))).kind).toBe('unavailable');
    expect((await failure(dead.probe(ctx()))).kind).toBe('unavailable');
    await dead.close();
  });
});

describe('broken streams from a raw upstream', () => {
  let raw: http.Server;
  let body = '';
  const ports: number[] = [];
  let rawProvider: Provider;
  beforeAll(async () => {
    // Ends the response a little after the last event, as a real upstream may.
    raw = http.createServer((req, res) => {
      ports.push(req.socket.remotePort ?? 0);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(body);
      setTimeout(() => res.end(), 20);
    });
    raw.listen(0, '127.0.0.1');
    await once(raw, 'listening');
    rawProvider = createOpenAICompatibleProvider({ id: 'raw', baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}` });
  });
  afterAll(async () => {
    await rawProvider.close();
    raw.close();
  });

  it.each([
    ['only [DONE]', 'data: [DONE]\n\n', 'empty_stream'],
    ['a chunk without choices', 'data: {"id":"x"}\n\ndata: [DONE]\n\n', 'malformed_stream'],
    ['an empty body', '', 'connection_dropped'],
  ])('%s', async (_name, sse, kind) => {
    body = sse;
    expect((await failure(collect(rawProvider.chatStream(hello, ctx())))).kind).toBe(kind);
  });

  it('after [DONE] the body is read to its end, keeping the connection for the next call', async () => {
    body = 'data: {"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    ports.length = 0;
    for (let i = 0; i < 4; i++) {
      await collect(rawProvider.chatStream(hello, ctx()));
      // A fully read body hands its socket back to the pool within a tick or two; an unread one never does.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(new Set(ports).size).toBeLessThanOrEqual(2);
  });

  it('a missing usage chunk still finishes, without usage', async () => {
    body = 'data: {"choices":[{"delta":{"content":"Hi"},"finish_reason":"length"}]}\n\ndata: [DONE]\n\n';
    expect(await collect(rawProvider.chatStream(hello, ctx()))).toEqual([
      { type: 'delta', content: 'Hi' },
      { type: 'finish', finishReason: 'length' },
    ]);
  });
});

describe('Azure deployments', () => {
  it('uses the deployment URL, api-version and api-key header', async () => {
    const azure = createOpenAICompatibleProvider({ id: 'azure', baseUrl: up.url, apiKey: 'sk-test', azure: { apiVersion: '2024-10-21' } });
    const result = await azure.chat({ ...hello, model: 'my-deploy' }, ctx());
    await azure.embed({ model: 'emb-deploy', input: ['a'] }, ctx());
    await azure.close();
    expect(result.content).toBe(ANSWER);
    expect(up.requests.map((r) => r.path)).toEqual([
      '/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21',
      '/openai/deployments/emb-deploy/embeddings?api-version=2024-10-21',
    ]);
    expect(up.requests[0].headers['api-key']).toBe('sk-test');
    expect(up.requests[0].headers.authorization).toBeUndefined();
  });
});

describe('embed and probe', () => {
  it('embeds with dimensions and float encoding', async () => {
    const result = await provider.embed({ model: 'emb', input: ['alpha', 'beta gamma'], dimensions: 4 }, ctx());
    expect(result).toEqual({ vectors: [fakeVector('alpha', 4), fakeVector('beta gamma', 4)], promptTokens: 3 });
    expect(result.vectors[0]).toHaveLength(4);
    expect(up.requests[0].path).toBe('/v1/embeddings');
    expect(up.requests[0].body).toEqual({ model: 'emb', input: ['alpha', 'beta gamma'], dimensions: 4, encoding_format: 'float' });
  });

  it('probes GET /models', async () => {
    await provider.probe(ctx());
    expect(up.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    up.faults.push({ type: 'unavailable' });
    expect((await failure(provider.probe(ctx()))).kind).toBe('unavailable');
  });
});
