// The Anthropic Messages adapter against the fake upstream, over real HTTP.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../../mocks/upstreams/fake-anthropic.js';
import type { Fault, FakeUpstream } from '../../mocks/upstreams/faults.js';
import { createAnthropicProvider } from '../../server/providers/anthropic.js';
import { ProviderError, type ChatRequest, type ChatStreamEvent, type Provider } from '../../server/providers/types.js';
import { collect, ctx, failure } from './support.js';

const ANSWER = 'Claude says hello there.';
const hello: ChatRequest = { model: 'claude-test', messages: [{ role: 'user', content: 'Say hello' }] };
const PNG = 'iVBORw0KGgo=';

let up: FakeUpstream;
let provider: Provider;

beforeAll(async () => {
  up = await startFakeAnthropic({ answer: ANSWER, apiKey: 'ak-test' });
  provider = createAnthropicProvider({ id: 'anthropic-fake', baseUrl: up.url, apiKey: 'ak-test' });
});
afterAll(async () => {
  await provider.close();
  await up.close();
});
afterEach(() => {
  up.faults.clear();
  up.requests.length = 0;
  up.config.chunkIntervalMs = 0;
  up.config.spaceAfterWords = false;
});

describe('request translation', () => {
  it('moves system messages to `system`, merges same-role turns and maps parameters', async () => {
    const result = await provider.chat(
      {
        model: 'claude-test',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'One' },
          { role: 'user', content: [{ type: 'text', text: 'Two' }] },
          { role: 'system', content: 'Be kind.' },
        ],
        temperature: 1.5,
        topP: 0.5,
        stop: ['END'],
      },
      ctx(),
    );
    const [req] = up.requests;
    expect(req.path).toBe('/v1/messages');
    expect(req.headers['x-api-key']).toBe('ak-test');
    expect(req.headers['anthropic-version']).toBe('2023-06-01');
    expect(req.body).toEqual({
      model: 'claude-test',
      system: 'Be brief.\n\nBe kind.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'One' }, { type: 'text', text: 'Two' }] }],
      max_tokens: 4096,
      temperature: 1,
      top_p: 0.5,
      stop_sequences: ['END'],
    });
    expect(result).toEqual({ content: ANSWER, finishReason: 'stop', usage: { promptTokens: 6, completionTokens: 4 } });
  });

  it('translates data: and https image URLs', async () => {
    await provider.chat(
      {
        ...hello,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
            ],
          },
        ],
      },
      ctx(),
    );
    expect(up.requests[0].body.messages[0].content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('asks for JSON in the system prompt for a json_schema response format', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } } };
    await provider.chat({ ...hello, responseFormat: { type: 'json_schema', json_schema: { name: 'answer', schema } } }, ctx());
    expect(up.requests[0].body.system).toBe(`Answer only with valid JSON matching this JSON Schema (answer), no other text:\n${JSON.stringify(schema)}`);
  });

  it('sends an assistant prefix as the final assistant turn and returns the continuation', async () => {
    const result = await provider.chat({ ...hello, assistantPrefix: { text: 'Claude says', mode: 'native' } }, ctx());
    expect(up.requests[0].body.messages.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Claude says' }] });
    expect(result.content).toBe(' hello there.');
  });

  it('sends a prefix ending in whitespace without it (the API answers 400 to it) and drops it from the continuation', async () => {
    const assistantPrefix = { text: 'Claude says \n', mode: 'native' } as const;
    const result = await provider.chat({ ...hello, assistantPrefix }, ctx());
    expect(up.requests[0].body.messages.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Claude says' }] });
    expect(result.content).toBe('hello there.');
    const events = await collect(provider.chatStream({ ...hello, assistantPrefix: { text: 'Claude says ', mode: 'native' } }, ctx()));
    expect(events.map((e) => (e.type === 'delta' ? e.content : '')).join('')).toBe('hello there.');
    // Pieces that are only whitespace go entirely.
    up.config.spaceAfterWords = true;
    const spaced = await collect(provider.chatStream({ ...hello, assistantPrefix: { text: 'Claude ', mode: 'native' } }, ctx()));
    expect(spaced.map((e) => (e.type === 'delta' ? e.content : '')).join('')).toBe('says hello there.');
  });

  it('the fake refuses a prefill ending in whitespace, as the real API does', async () => {
    const res = await fetch(`${up.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'ak-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 10, messages: [...hello.messages, { role: 'assistant', content: 'Claude says ' }] }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/trailing whitespace/);
  });

  it('a 400 to a prefixed request is prefix_refused (the gateway tries the next deployment); mode none is never sent', async () => {
    up.faults.push({ type: 'refuse_prefix' });
    const assistantPrefix = { text: 'Claude says', mode: 'native' } as const;
    expect((await failure(collect(provider.chatStream({ ...hello, assistantPrefix }, ctx())))).kind).toBe('prefix_refused');
    expect((await failure(provider.chat({ ...hello, assistantPrefix: { text: 'Claude', mode: 'none' } }, ctx()))).kind).toBe('prefix_refused');
    expect(up.requests).toHaveLength(1);
  });
});

describe('tools', () => {
  const tools: ChatRequest = {
    model: 'claude-test',
    messages: [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 't2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'sunny' },
      { role: 'tool', tool_call_id: 't2', content: 'rain' },
      { role: 'user', content: 'Now London' },
    ],
    tools: [{ type: 'function', function: { name: 'weather', description: 'Weather by city', parameters: { type: 'object' } } }],
    toolChoice: 'required',
    parallelToolCalls: false,
  };

  it('translates tool history, tools and tool_choice, and returns the tool call', async () => {
    const result = await provider.chat(tools, ctx());
    const { body } = up.requests[0];
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 't1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 't2', name: 'weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'sunny' },
          { type: 'tool_result', tool_use_id: 't2', content: 'rain' },
          { type: 'text', text: 'Now London' },
        ],
      },
    ]);
    expect(body.tools).toEqual([{ name: 'weather', description: 'Weather by city', input_schema: { type: 'object' } }]);
    expect(body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(result).toEqual({
      content: null,
      toolCalls: [{ id: 'toolu_fake_1', type: 'function', function: { name: 'weather', arguments: '{"input":"Now London"}' } }],
      finishReason: 'tool_calls',
      usage: { promptTokens: 9, completionTokens: 2 },
    });
  });

  it('maps tool_choice none, auto and a named function', async () => {
    for (const toolChoice of ['none', 'auto', { type: 'function', function: { name: 'weather' } }] as const) {
      await provider.chat({ ...hello, tools: tools.tools, toolChoice }, ctx());
    }
    expect(up.requests.map((r) => r.body.tool_choice)).toEqual([{ type: 'none' }, { type: 'auto' }, { type: 'tool', name: 'weather' }]);
  });

  it('streams tool_use blocks as tool call deltas', async () => {
    const events = await collect(provider.chatStream({ ...hello, tools: tools.tools, toolChoice: 'required' }, ctx()));
    const deltas = events.flatMap((e) => (e.type === 'delta' ? (e.toolCalls ?? []) : []));
    expect(deltas[0]).toEqual({ index: 0, id: 'toolu_fake_1', type: 'function', function: { name: 'weather', arguments: '' } });
    expect(deltas.every((d) => d.index === 0)).toBe(true);
    expect(deltas.map((d) => d.function?.arguments).join('')).toBe('{"input":"Say hello"}');
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'tool_calls', usage: { promptTokens: 2, completionTokens: 2 } });
  });
});

describe('chatStream', () => {
  it('yields text deltas as they arrive, then one finish with usage', async () => {
    up.config.chunkIntervalMs = 30;
    const events: ChatStreamEvent[] = [];
    let completedAtFirstDelta: boolean | undefined;
    for await (const event of provider.chatStream(hello, ctx())) {
      if (events.length === 0) completedAtFirstDelta = up.requests[0].completed;
      events.push(event);
    }
    expect(completedAtFirstDelta).toBe(false);
    expect(events).toEqual([
      { type: 'delta', content: 'Claude' },
      { type: 'delta', content: ' says' },
      { type: 'delta', content: ' hello' },
      { type: 'delta', content: ' there.' },
      { type: 'finish', finishReason: 'stop', usage: { promptTokens: 2, completionTokens: 4 } },
    ]);
    expect(up.requests[0].body.stream).toBe(true);
  });

  it('maps a refusal stop reason to content_filter', async () => {
    up.faults.push({ type: 'content_filter_finish' });
    const events = await collect(provider.chatStream(hello, ctx()));
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'content_filter' });
  });
});

describe('faults', () => {
  const cases: [string, Fault, ProviderError['kind'], Partial<ProviderError['details']>][] = [
    ['429 with Retry-After', { type: 'rate_limit', retryAfter: '3' }, 'rate_limit', { status: 429, retryAfterMs: 3000 }],
    ['529 overloaded', { type: 'unavailable', status: 529 }, 'unavailable', { status: 529 }],
    ['500', { type: 'server_error' }, 'server', { status: 500 }],
    ['401', { type: 'bad_key' }, 'auth', { status: 401 }],
    ['prompt too long', { type: 'context_length' }, 'context_length', { status: 400 }],
    ['content filtering', { type: 'content_filter' }, 'content_filter', { status: 400 }],
    ['reset before headers', { type: 'reset' }, 'unavailable', {}],
    ['no answer', { type: 'hang' }, 'timeout', { timeout: 'connect' }],
    ['slow first token', { type: 'slow_first_token', ms: 1000 }, 'timeout', { timeout: 'first_token' }],
    // message_start, content_block_start and a ping come first: a stall after them is before the first token.
    ['stream stall before the first token', { type: 'stall', afterChunks: 3 }, 'timeout', { timeout: 'first_token' }],
    ['stream stall', { type: 'stall', afterChunks: 5 }, 'timeout', { timeout: 'idle' }],
    ['stream cut', { type: 'cut', afterChunks: 3 }, 'connection_dropped', {}],
    ['malformed event', { type: 'malformed', afterChunks: 3 }, 'malformed_stream', {}],
    ['no message_stop', { type: 'no_done' }, 'connection_dropped', {}],
    ['overloaded_error event', { type: 'stream_error', error: 'overloaded', afterChunks: 3 }, 'unavailable', {}],
    ['rate_limit_error event', { type: 'stream_error', error: 'rate_limit' }, 'rate_limit', {}],
    // Pings every 50 ms: the first-token and idle deadlines (200 ms) must not take them for tokens.
    ['opening events and pings, never a token', { type: 'no_tokens', pingEveryMs: 50 }, 'timeout', { timeout: 'first_token' }],
    ['a stall kept alive by pings', { type: 'stall', afterChunks: 5, pingEveryMs: 50 }, 'timeout', { timeout: 'idle' }],
    ['in-stream auth error', { type: 'stream_error', error: 'auth' }, 'auth', {}],
    ['in-stream bad request', { type: 'stream_error', error: 'bad_request' }, 'bad_request', {}],
  ];

  it.each(cases)('%s', async (_name, fault, kind, details) => {
    up.faults.push(fault);
    const err = await failure(collect(provider.chatStream(hello, ctx())));
    expect(err.kind).toBe(kind);
    expect(err.details).toMatchObject(details);
  });

  it('abort cancels the upstream request', async () => {
    up.config.chunkIntervalMs = 50;
    const controller = new AbortController();
    const events = provider.chatStream(hello, ctx(controller.signal))[Symbol.asyncIterator]();
    expect((await events.next()).value).toEqual({ type: 'delta', content: 'Claude' });
    controller.abort(new Error('client left'));
    await expect(events.next()).rejects.toThrow('client left');
    await up.requests[0].closed;
    expect(up.requests[0].completed).toBe(false);
  });
});

describe('embed and probe', () => {
  it('has no embeddings', async () => {
    const err = await failure(provider.embed({ model: 'x', input: ['a'] }, ctx()));
    expect(err.kind).toBe('bad_request');
    expect(up.requests).toHaveLength(0);
  });

  it('probes GET /v1/models', async () => {
    await provider.probe(ctx());
    expect(up.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    up.faults.push({ type: 'bad_key' });
    expect((await failure(provider.probe(ctx()))).kind).toBe('auth');
  });
});
