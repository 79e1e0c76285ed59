// Streams as async iterators over real SSE from the fault server: chat chunks (grounded
// citations first), Responses named events, in-stream errors thrown as typed errors with
// their trace id, content-filter ends reported, `break` aborting the request, helpers.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clientRoutesById } from '../../generated/contract/client-routes.js';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
  ChatCompletionStream,
  Platform,
  PlatformError,
  ProviderTimeoutError,
  RateLimitError,
  ResponseStream,
  type ResponseStreamEvent,
} from '../../sdk/src/index.js';
import { aiError, startFaultServer, type FaultServer, type SseItem } from './support/fault-server.js';
import { chat, until } from './support/helpers.js';

const CHAT = 'POST /ai/v2/guarded/chat/completions';
const GROUNDED = 'POST /ai/v2/grounded/chat/completions';
// The canonical path of createResponse, whichever the contract names.
const RESPONSES = `POST ${clientRoutesById.createResponse.path}`;

let server: FaultServer;
let platform: Platform;
beforeAll(async () => {
  server = await startFaultServer();
  platform = new Platform({ apiKey: 'sk_test', baseUrl: server.url, managementBaseUrl: server.url });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const chunk = (content: string | undefined, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  data: {
    id: 'chatcmpl-s',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gloo-openai-gpt-5-mini',
    choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finish }],
    ...extra,
  },
});
const DONE: SseItem = { data: '[DONE]' };
const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };

describe('chat completion streams', () => {
  it('yields each chunk and sums text, finish reason and usage', async () => {
    server.script(CHAT, { sse: [chunk('Hope is'), chunk(' the confident'), chunk(' expectation.'), chunk(undefined, 'stop', { usage }), DONE] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true, stream_options: { include_usage: true } } });
    expect(stream).toBeInstanceOf(ChatCompletionStream);
    const seen: string[] = [];
    for await (const event of stream) {
      if ('choices' in event && event.choices[0] && 'delta' in event.choices[0]) seen.push(event.choices[0].delta.content ?? '');
    }
    expect(seen.join('')).toBe('Hope is the confident expectation.');
    const result = await stream.collect();
    expect(result).toMatchObject({ text: 'Hope is the confident expectation.', finishReason: 'stop', contentFiltered: false, usage });
    expect(stream.traceId).toMatch(/^trc_/);
    expect(JSON.parse(server.requestsTo(CHAT)[0]!.body)).toMatchObject({ stream: true });
  });

  it('exposes the grounded citations event, which comes first', async () => {
    const citations = [{ item_id: 'i1', title: 'Sabbath Rest', publisher: 'Example', url: null, snippet: 'Rest is received.', certainty: 0.83 }];
    server.script(GROUNDED, {
      sse: [{ data: { id: 'g', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], citations, sources_returned: true } }, chunk('Rest'), chunk(undefined, 'stop'), DONE],
    });
    const stream = await platform.createGroundedChatCompletion({ body: { ...chat, rag_publisher: 'Example', include_citations: true, stream: true } });
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.value).toMatchObject({ choices: [], citations });
    expect(stream.citations).toEqual(citations);
    while (!(await iterator.next()).done) {
      // read the rest
    }
    const result = await stream.collect();
    expect(result).toMatchObject({ text: 'Rest', citations, sourcesReturned: true });
  });

  it('throws an in-stream error chunk as the typed error, with its trace id, after the earlier chunks', async () => {
    server.script(CHAT, {
      sse: [
        chunk('Partial'),
        chunk(undefined, 'error', { error: aiError('RATE_LIMIT', 2004, true).error, trace_id: 'trc_0123456789abcdef0123456789abcdef' }),
        DONE,
      ],
    });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    const got: unknown[] = [];
    let caught: unknown;
    try {
      for await (const event of stream) got.push(event);
    } catch (error) {
      caught = error;
    }
    expect(got).toHaveLength(1);
    expect(caught).toBeInstanceOf(RateLimitError);
    expect(caught).toMatchObject({ name: 'RATE_LIMIT', code: 2004, retryable: true, category: 'provider', inStream: true, traceId: 'trc_0123456789abcdef0123456789abcdef' });
    expect((caught as RateLimitError).headers.get('content-type')).toBe('text/event-stream');
  });

  it.each([
    ['PROVIDER_TIMEOUT', 2001, ProviderTimeoutError],
    ['CONNECTION_DROPPED', 2009, PlatformError],
  ] as const)('maps a %s error event to its class', async (name, code, cls) => {
    server.script(CHAT, { sse: [chunk(undefined, 'error', { error: aiError(name, code, true).error, trace_id: 'trc_e' })] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    const error = await stream.finalText().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(cls);
    expect(error).toMatchObject({ name, code, traceId: 'trc_e' });
    expect((error as Error).constructor.name).toBe(name === 'PROVIDER_TIMEOUT' ? 'ProviderTimeoutError' : 'ConnectionDroppedError');
  });

  it('names an error event that only carries a numeric code through the catalog', async () => {
    server.script(CHAT, { sse: [chunk(undefined, 'error', { error: { code: 2001, message: 'slow' }, trace_id: 'trc_n' })] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    const error = await stream.finalText().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderTimeoutError);
    expect(error).toMatchObject({ name: 'PROVIDER_TIMEOUT', code: 2001, status: 408, inStream: true, traceId: 'trc_n' });
  });

  it('reports a content_filter end instead of throwing', async () => {
    server.script(CHAT, { sse: [chunk('I cannot'), chunk(' continue.'), chunk(undefined, 'content_filter'), DONE] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    const result = await stream.collect();
    expect(result).toMatchObject({ text: 'I cannot continue.', finishReason: 'content_filter', contentFiltered: true });
    expect(stream.contentFiltered).toBe(true);
  });

  it('aborts the HTTP request when the loop is left with break', async () => {
    const items: SseItem[] = [chunk('one')];
    for (let i = 0; i < 50; i++) items.push({ pauseMs: 20 }, chunk(` ${i}`));
    server.script(CHAT, { sse: [...items, DONE] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    for await (const event of stream) {
      expect(event).toMatchObject({ object: 'chat.completion.chunk' });
      break;
    }
    const request = server.requestsTo(CHAT)[0]!;
    await Promise.race([request.aborted, new Promise((_, reject) => setTimeout(() => reject(new Error('server never saw the abort')), 2000))]);
    expect(request.wasAborted()).toBe(true);
    expect(stream.finished).toBe(true);
  });

  it("ends with APIUserAbortError when the caller's signal aborts mid-stream", async () => {
    server.script(CHAT, { sse: [chunk('a'), { pauseMs: 2000 }, chunk('b'), DONE] });
    const controller = new AbortController();
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { signal: controller.signal });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    setTimeout(() => controller.abort(), 20);
    await expect(iterator.next()).rejects.toBeInstanceOf(APIUserAbortError);
    await until(() => server.requestsTo(CHAT)[0]!.wasAborted(), 2000);
  });

  it('reports a connection dropped mid-stream as APIConnectionError (not retried)', async () => {
    server.script(CHAT, { sse: [chunk('a'), { pauseMs: 10 }, { raw: 'data: {"id":"x","obj' }, { destroy: true }] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    const error = await stream.collect().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as Error).message).toMatch(/stream broke off/);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it('throws APIConnectionTimeoutError when the stream stalls longer than the timeout between chunks', async () => {
    server.script(CHAT, { sse: [chunk('a'), { pauseMs: 50 }, chunk('b'), { pauseMs: 5000 }, chunk('c', 'stop'), DONE] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { timeout: 300 });
    const seen: string[] = [];
    let caught: unknown;
    const started = performance.now();
    try {
      for await (const event of stream) {
        if ('choices' in event && event.choices[0] && 'delta' in event.choices[0]) seen.push(event.choices[0].delta.content ?? '');
      }
    } catch (error) {
      caught = error;
    }
    expect(seen).toEqual(['a', 'b']); // a 50 ms gap is fine; only the stall times out
    expect(caught).toBeInstanceOf(APIConnectionTimeoutError);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(stream.finished).toBe(true);
    await until(() => server.requestsTo(CHAT)[0]!.wasAborted(), 2000);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it('counts only the server going quiet: a consumer slower than the timeout keeps a healthy stream', async () => {
    server.script(CHAT, { sse: [chunk('a'), chunk('b'), { pauseMs: 20 }, chunk('c', 'stop'), DONE] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { timeout: 150 });
    const seen: string[] = [];
    for await (const event of stream) {
      if ('choices' in event && event.choices[0] && 'delta' in event.choices[0]) seen.push(event.choices[0].delta.content ?? '');
      await new Promise((resolve) => setTimeout(resolve, 400)); // the consumer holds each chunk longer than the timeout
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect((await stream.collect()).finishReason).toBe('stop');
    expect(server.requestsTo(CHAT)[0]!.wasAborted()).toBe(false);
  });

  it('reads the rest of a complete answer after [DONE] rather than aborting its request', async () => {
    server.script(CHAT, { sse: [chunk('a', 'stop'), DONE, { pauseMs: 50 }, { raw: ': trailing comment\n\n' }] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { timeout: 2000 });
    await expect(stream.finalText()).resolves.toBe('a');
    await until(() => server.requestsTo(CHAT)[0]!.finished(), 2000);
    expect(server.requestsTo(CHAT)[0]!.wasAborted()).toBe(false);
  });

  it('times out a raw response body read through withResponse() too', async () => {
    server.script(CHAT, { sse: [chunk('a'), { pauseMs: 5000 }, DONE] });
    const { response } = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } }, { timeout: 200 }).withResponse();
    const error = await response.text().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
  });

  it('reports a malformed event as APIConnectionError', async () => {
    server.script(CHAT, { sse: [chunk('a'), { raw: 'data: {"id":"x","obj\n\n' }] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    await expect(stream.collect()).rejects.toThrow(/Malformed stream event/);
  });

  it('can be iterated only once', async () => {
    server.script(CHAT, { sse: [chunk('a', 'stop'), DONE] });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    await stream.finalText();
    expect(() => stream[Symbol.asyncIterator]()).toThrow(PlatformError);
    await expect(stream.finalText()).resolves.toBe('a'); // helpers still report the finished stream
  });

  it('parses CRLF line ends, comments, multi-line data and events split across writes', async () => {
    server.script(CHAT, {
      sse: [
        { raw: ': keep-alive\r\n\r\n' },
        { raw: 'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",\r\n' },
        { raw: 'data: "choices":[{"index":0,"delta":{"content":"A\\u00e9"},"finish_reason":null}]}\r' },
        { pauseMs: 10 },
        { raw: '\n\r\ndata: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"B"},"finish_reason":"stop"}]}\n\n' },
        { raw: 'data: [DONE]\n\n' },
      ],
    });
    const stream = await platform.createGuardedChatCompletion({ body: { ...chat, stream: true } });
    await expect(stream.finalText()).resolves.toBe('AéB');
  });
});

describe('Responses streams', () => {
  const response = (status: string, extra: Record<string, unknown> = {}) => ({
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    status,
    model: 'm',
    output: [],
    output_text: status === 'completed' ? 'Grace is unearned favour.' : '',
    incomplete_details: null,
    error: null,
    usage: status === 'completed' ? { input_tokens: 3, output_tokens: 4, total_tokens: 7 } : null,
    ...extra,
  });
  const named = (type: string, body: Record<string, unknown>, n: number): SseItem => ({ event: type, data: { type, sequence_number: n, ...body } });

  it('yields named events typed by name and collects text and usage', async () => {
    server.script(RESPONSES, {
      sse: [
        named('response.created', { response: response('in_progress') }, 0),
        named('response.output_text.delta', { item_id: 'm1', output_index: 0, content_index: 0, delta: 'Grace is' }, 1),
        named('response.output_text.delta', { item_id: 'm1', output_index: 0, content_index: 0, delta: ' unearned favour.' }, 2),
        named('response.completed', { response: response('completed') }, 3),
      ],
    });
    const stream = await platform.createResponse({ body: { model: 'm', input: 'Define grace', stream: true } });
    expect(stream).toBeInstanceOf(ResponseStream);
    const types: string[] = [];
    let deltas = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas += event.delta; // narrowed by name
    }
    expect(types).toEqual(['response.created', 'response.output_text.delta', 'response.output_text.delta', 'response.completed']);
    expect(deltas).toBe('Grace is unearned favour.');
    await expect(stream.finalText()).resolves.toBe('Grace is unearned favour.');
    await expect(stream.finalUsage()).resolves.toEqual({ input_tokens: 3, output_tokens: 4, total_tokens: 7 });
    await expect(stream.finalResponse()).resolves.toMatchObject({ id: 'resp_1', status: 'completed' });
  });

  it('reports X-Sources-Returned of a grounded responses stream', async () => {
    server.script('POST /ai/v1/grounded/responses', { headers: { 'x-sources-returned': 'false' }, sse: [named('response.completed', { response: response('completed') }, 0)] });
    const stream = await platform.createGroundedResponse({ body: { model: 'm', input: 'x', rag_publisher: 'Example', stream: true } });
    expect(stream.sourcesReturned).toBe(false);
    await expect(stream.collect()).resolves.toMatchObject({ sourcesReturned: false, text: 'Grace is unearned favour.' });
  });

  it('refuses a streaming request answered with JSON instead of an event stream', async () => {
    server.script(RESPONSES, { status: 200, body: response('completed') });
    await expect(platform.createResponse({ body: { model: 'm', input: 'x', stream: true } })).rejects.toThrow(/Expected a text\/event-stream answer/);
  });

  it('takes the event name from the SSE event: line when data has no type', async () => {
    server.script(RESPONSES, { sse: [{ event: 'response.output_text.delta', data: { sequence_number: 0, delta: 'x' } }] });
    const stream = await platform.createResponse({ body: { model: 'm', input: 'x', stream: true } });
    const events: ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    expect(events[0]!.type).toBe('response.output_text.delta');
  });

  it('throws the error event as the typed error with its trace id', async () => {
    server.script(RESPONSES, {
      sse: [
        named('response.created', { response: response('in_progress') }, 0),
        named('error', { code: 'PROVIDER_TIMEOUT', message: 'timed out', param: null, error: aiError('PROVIDER_TIMEOUT', 2001, true).error, trace_id: 'trc_resp' }, 1),
      ],
    });
    const stream = await platform.createResponse({ body: { model: 'm', input: 'x', stream: true } });
    const error = await stream.collect().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderTimeoutError);
    expect(error).toMatchObject({ traceId: 'trc_resp', inStream: true, retryable: true });
  });

  it('reports a content-filter stop and throws a failed response from finalResponse()', async () => {
    server.script(RESPONSES, { sse: [named('response.incomplete', { response: response('incomplete', { incomplete_details: { reason: 'content_filter' } }) }, 0)] });
    const filtered = await platform.createResponse({ body: { model: 'm', input: 'x', stream: true } });
    await expect(filtered.collect()).resolves.toMatchObject({ contentFiltered: true, status: 'incomplete' });

    server.script(RESPONSES, { sse: [named('response.failed', { response: response('failed', { error: { code: 'PROVIDER_INFERENCE_ERROR', message: 'boom' } }) }, 0)] });
    const failed = await platform.createResponse({ body: { model: 'm', input: 'x', stream: true } });
    await expect(failed.finalResponse()).rejects.toMatchObject({ name: 'PROVIDER_INFERENCE_ERROR', status: 500 });
  });
});
