// Streamed responses: the named event sequence of every output type (text, function call,
// image), incomplete ends (content filter, max tokens), and every failure after the commit
// point against fake upstreams (cut, in-stream errors of each kind, malformed chunk, stall,
// missing terminator): an `error` event, then `response.failed` with the enriched error and
// the trace id; a break that another deployment can continue is resumed into one whole
// answer; a stream that never gives a token fails before the commit point, as an HTTP
// error. Every event is checked against the contract and the sequence numbers run 0, 1,
// 2, … without a gap.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream, Fault } from '../../mocks/upstreams/faults.js';
import { errorCatalog, type ErrorName } from '../../generated/contract/errors.js';
import { indexItem } from '../support/content.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { meter } from '../support/usage.js';
import { catalogOf, readEvents, type NamedEvent } from './support.js';

function checkSequence(events: NamedEvent[]) {
  expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
  for (const e of events) {
    expect(e.data.type).toBe(e.event);
    expect(eventProblems('createResponse', e.data), e.event).toEqual([]);
  }
}

/** Event names with runs of deltas folded into one, for readable sequence assertions. */
const shape = (events: NamedEvent[]) => events.map((e) => e.event).filter((name, i, all) => !(name.endsWith('.delta') && all[i - 1] === name));

describe('event sequences on the local provider', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' });
  }, 120_000);
  afterAll(() => platform?.close());
  const stream = async (body: Record<string, unknown>) => {
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'local-chat', stream: true, ...body }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readEvents(res);
    checkSequence(events);
    return events;
  };

  it('text: created, in_progress, item and part added, deltas, text done, part and item done, completed', async () => {
    const plain = await (await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'local-chat', input: 'What does hope mean?' }) })).json();
    const events = await stream({ input: 'What does hope mean?' });
    expect(shape(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[0].data.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
    const text = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
    expect(text).toBe(plain.output_text);
    expect(events.find((e) => e.event === 'response.output_text.done')!.data.text).toBe(text);
    const final = events.at(-1)!.data.response;
    expect(final).toMatchObject({ status: 'completed', output_text: text, id: events[0].data.response.id });
    expect(final.usage).toEqual(plain.usage);
    expect(final.output[0].id).toBe(events[2].data.item.id);
  });

  it('function call: item added, argument deltas, arguments done, item done, completed', async () => {
    const tool = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
    const events = await stream({ input: 'What is the weather? city: Paris', tools: [tool], tool_choice: 'required' });
    expect(shape(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const args = events.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta).join('');
    expect(JSON.parse(args)).toEqual({ city: 'Paris' });
    expect(events.find((e) => e.event === 'response.function_call_arguments.done')!.data).toMatchObject({ arguments: args, name: 'get_weather' });
    expect(events.at(-1)!.data.response.output[0]).toMatchObject({ type: 'function_call', arguments: args, status: 'completed' });
  });

  it('image generation: item added, in_progress, generating, completed, item done with the image', async () => {
    const events = await stream({ input: 'Draw a lighthouse at dawn.', tools: [{ type: 'image_generation' }], tool_choice: { type: 'image_generation' } });
    expect(shape(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.image_generation_call.in_progress',
      'response.image_generation_call.generating',
      'response.image_generation_call.completed',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2].data.item).toMatchObject({ type: 'image_generation_call', status: 'in_progress', result: null });
    const done = events.find((e) => e.event === 'response.output_item.done')!.data.item;
    expect(Buffer.from(done.result, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(events.at(-1)!.data.response.output).toEqual([done]);
  });

  it('moderated output: the stream ends response.incomplete (content_filter) and never sends the flagged words', async () => {
    const events = await stream({
      input: [
        { role: 'system', content: 'Passage: Instructions for making sarin: mix the precursors in a flask and heat them.' },
        { role: 'user', content: 'What does the passage say about the flask?' },
      ],
    });
    const last = events.at(-1)!;
    expect(last.event).toBe('response.incomplete');
    expect(last.data.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(JSON.stringify(events)).not.toMatch(/sarin/i);
  });

  it('max_output_tokens: the stream ends response.incomplete (max_output_tokens), the item incomplete', async () => {
    const events = await stream({ input: 'What does hope mean?', max_output_tokens: 5 });
    const last = events.at(-1)!;
    expect(last.event).toBe('response.incomplete');
    expect(last.data.response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(events.find((e) => e.event === 'response.output_item.done')!.data.item.status).toBe('incomplete');
  });

  it('a guardrail block is a 403 before any event', async () => {
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'local-chat', stream: true, input: 'How do I make a nerve agent like sarin at home?' }) });
    expect(res.status).toBe(403);
    expect((await res.json()).error.name).toBe('GUARDRAIL_BLOCKED');
  });
});

const ANSWER = 'The quick brown fox jumps over the lazy dog near the quiet river bank.';

describe('failures after the commit point (fake upstreams)', () => {
  let primary: FakeUpstream;
  let fallback: FakeUpstream;
  let platform: TestPlatform;

  beforeAll(async () => {
    primary = await startFakeOpenAI({ answer: ANSWER });
    fallback = await startFakeOpenAI({ answer: ANSWER });
    const catalog = catalogOf({
      providers: [
        { id: 'primary', type: 'openai', base_url: `${primary.url}/v1` },
        { id: 'fallback', type: 'openai', base_url: `${fallback.url}/v1`, prefix: 'vllm' },
      ],
      deployments: [
        { id: 'd-primary', provider: 'primary', model: 'primary-model', order: 1 },
        { id: 'd-fallback', provider: 'fallback', model: 'fallback-model', order: 2 },
        { id: 'd-solo', provider: 'primary', model: 'solo-model' },
      ],
      models: [
        { id: 'm', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, capabilities: { tools: true }, deployments: ['d-primary', 'd-fallback'] },
        { id: 'solo', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments: ['d-solo'] },
      ],
      // Generous enough for a loaded machine; the stall test waits idle_ms once.
      timeouts: { connect_ms: 2_000, first_token_ms: 2_000, idle_ms: 1_000 },
      failover: { max_attempts: 3, retry_after_cap_ms: 0, resume_streams: true, routes: {} },
      // Every request meets its fault: circuits stay closed.
      circuit: { failure_threshold: 1_000, failure_rate: null },
    });
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog });
  }, 120_000);
  afterAll(async () => {
    await platform?.close();
    await Promise.all([primary?.close(), fallback?.close()]);
  });
  beforeEach(() => {
    primary.faults.clear();
    fallback.faults.clear();
    primary.requests.length = 0;
    fallback.requests.length = 0;
    primary.config.refuse = false;
  });

  const stream = async (model: string) => {
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model, stream: true, input: 'Tell me about the fox.' }) });
    expect(res.status, res.status === 200 ? '' : await res.clone().text()).toBe(200);
    const traceId = res.headers.get('x-trace-id');
    const events = await readEvents(res);
    checkSequence(events);
    return { events, traceId };
  };

  /** The stream ended with `error` then `response.failed`, both carrying the enriched error and the trace id. */
  function expectFailed(events: NamedEvent[], traceId: string | null, name: ErrorName) {
    const [error, failed] = events.slice(-2);
    expect(error.event).toBe('error');
    const { code, retryable } = errorCatalog[name];
    expect(error.data).toMatchObject({ code: name, trace_id: traceId, error: { name, code, retryable, category: 'provider' } });
    expect(failed.event).toBe('response.failed');
    expect(failed.data).toMatchObject({ trace_id: traceId, error: error.data.error });
    expect(failed.data.response).toMatchObject({ status: 'failed', error: { code: name } });
    expect(events.some((e) => e.event === 'response.completed')).toBe(false);
  }

  it('a cut with no deployment left to resume on: deltas, then error and response.failed (CONNECTION_DROPPED)', async () => {
    // Paced frames: the text before the cut reaches the platform before the socket dies.
    primary.config.chunkIntervalMs = 50;
    primary.faults.push({ type: 'cut', afterChunks: 4 });
    const { events, traceId } = await stream('solo').finally(() => (primary.config.chunkIntervalMs = 0));
    expect(events.some((e) => e.event === 'response.output_text.delta')).toBe(true);
    expectFailed(events, traceId, 'CONNECTION_DROPPED');
    // What was sent stays in the failed snapshot.
    const sent = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
    expect(events.at(-1)!.data.response.output[0].content[0].text).toBe(sent);
  });

  // Each fault comes after the first word (frame 0 is the role-only opening chunk): past the commit point.
  it.each([
    ['an in-stream rate limit', 'RATE_LIMIT', { type: 'stream_error', error: 'rate_limit', afterChunks: 2 }],
    ['an in-stream 5xx', 'PROVIDER_INFERENCE_ERROR', { type: 'stream_error', error: 'server', afterChunks: 2 }],
    ['an in-stream overload', 'PROVIDER_UNAVAILABLE', { type: 'stream_error', error: 'overloaded', afterChunks: 2 }],
    ['an in-stream auth error', 'PROVIDER_AUTH_ERROR', { type: 'stream_error', error: 'auth', afterChunks: 2 }],
    ['an in-stream bad request', 'PROVIDER_BAD_REQUEST', { type: 'stream_error', error: 'bad_request', afterChunks: 2 }],
    ['a malformed upstream chunk', 'MALFORMED_PROVIDER_STREAM', { type: 'malformed', afterChunks: 2 }],
    ['a stall past idle_ms', 'PROVIDER_TIMEOUT', { type: 'stall', afterChunks: 2 }],
    ['a stall past idle_ms kept alive by pings', 'PROVIDER_TIMEOUT', { type: 'stall', afterChunks: 2, pingEveryMs: 100 }],
    ['a stream ending without [DONE]', 'CONNECTION_DROPPED', { type: 'no_done' }],
  ] as [string, ErrorName, Fault][])('%s: deltas, then error and response.failed with %s', async (_name, name, fault) => {
    primary.faults.push(fault);
    const { events, traceId } = await stream('solo');
    expect(events.some((e) => e.event === 'response.output_text.delta')).toBe(true);
    expectFailed(events, traceId, name);
  });

  it('a grounded stream that fails still reports its sources in response.failed (the grounded event schema)', async () => {
    const { identity, database } = platform.services;
    const org = await database.prisma.organization.findUniqueOrThrow({ where: { id: platform.bootstrap!.organizationId } });
    const publisher = await identity.organizations.createPublisher(org.name, `Fox Press ${randomUUID()}`);
    const item = await indexItem(platform, publisher.id, [ANSWER], { title: 'The Fox' });
    primary.faults.push({ type: 'stream_error', error: 'rate_limit', afterChunks: 2 });
    const res = await platform.api('/ai/v1/grounded/responses', {
      method: 'POST',
      body: JSON.stringify({ model: 'solo', stream: true, input: 'Tell me about the quick brown fox.', rag_publisher: publisher.name, certainty_threshold: 0.3 }),
    });
    expect(res.headers.get('x-sources-returned')).toBe('true');
    const events = await readEvents(res);
    for (const e of events) expect(eventProblems('createGroundedResponse', e.data), e.event).toEqual([]);
    expectFailed(events, res.headers.get('x-trace-id'), 'RATE_LIMIT');
    expect(events.at(-1)!.data.response).toMatchObject({ sources_returned: true, citations: [expect.objectContaining({ item_id: item.id, title: 'The Fox' })] });
  });

  it('a cut resumed on another deployment: one whole answer, completed, no error event', async () => {
    primary.faults.push({ type: 'cut', afterChunks: 3 });
    const { events } = await stream('m');
    const text = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
    expect(text).toBe(ANSWER);
    expect(events.at(-1)!.event).toBe('response.completed');
    expect(events.at(-1)!.data.response.output_text).toBe(ANSWER);
    expect(events.some((e) => e.event === 'error')).toBe(false);
    expect(fallback.requests).toHaveLength(1);
  });

  it('a failure before the first byte fails over: the stream opens on the fallback', async () => {
    primary.faults.push({ type: 'server_error' });
    const { events } = await stream('m');
    expect(events.at(-1)!.event).toBe('response.completed');
    expect(primary.requests).toHaveLength(1);
    expect(fallback.requests).toHaveLength(1);
  });

  it.each([
    ['a bad key', { type: 'bad_key' }, 500, 'PROVIDER_AUTH_ERROR'],
    // The opening chunk is no token: the stream is not committed while the first token is awaited.
    ['no token at all, only the opening chunk and pings', { type: 'no_tokens', pingEveryMs: 100 }, 408, 'PROVIDER_TIMEOUT'],
  ] as [string, Fault, number, ErrorName][])('nothing can answer before the first byte (%s): an HTTP error, not a stream', async (_name, fault, status, name) => {
    primary.faults.always(fault);
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'solo', stream: true, input: 'Tell me about the fox.' }) });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/json/);
    const body = await res.json();
    expect(contractProblems('createResponse', status, body)).toEqual([]);
    expect(body.error.name).toBe(name);
  });

  describe('refusals from an OpenAI-compatible upstream', () => {
    const refusalOf = (response: { output: { type: string; content?: { type: string; refusal?: string }[] }[] }) =>
      response.output.flatMap((item) => item.content ?? []).find((part) => part.type === 'refusal')?.refusal;

    it('plain: a message with a refusal part, no output_text', async () => {
      primary.config.refuse = true;
      const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'solo', input: 'Tell me about the fox.' }) });
      const body = await res.json();
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(contractProblems('createResponse', 200, body)).toEqual([]);
      expect(body.status).toBe('completed');
      expect(body.output).toHaveLength(1);
      expect(body.output[0]).toMatchObject({ type: 'message', status: 'completed', content: [{ type: 'refusal', refusal: ANSWER }] });
      expect(body.output_text).toBe('');
    });

    it('streamed: refusal part added, refusal deltas and done, part and item done, completed', async () => {
      primary.config.refuse = true;
      const { events } = await stream('solo');
      expect(shape(events)).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.refusal.delta',
        'response.refusal.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      const deltas = events.filter((e) => e.event === 'response.refusal.delta').map((e) => e.data.delta).join('');
      expect(deltas).toBe(ANSWER);
      expect(events.find((e) => e.event === 'response.refusal.done')!.data.refusal).toBe(ANSWER);
      expect(refusalOf(events.at(-1)!.data.response)).toBe(ANSWER);
      expect(events.at(-1)!.data.response.output_text).toBe('');
    });

    it('a refusal cut midway is not resumed as text elsewhere: it ends failed, keeping what was refused, billed for it', async () => {
      primary.config.refuse = true;
      primary.config.chunkIntervalMs = 30;
      primary.faults.push({ type: 'cut', afterChunks: 4 });
      const metered = await meter(platform, { organizationId: platform.bootstrap!.organizationId, operation: 'createResponse' });
      const { events, traceId } = await stream('m').finally(() => (primary.config.chunkIntervalMs = 0));
      expect(fallback.requests).toHaveLength(0);
      expectFailed(events, traceId, 'CONNECTION_DROPPED');
      const sent = events.filter((e) => e.event === 'response.refusal.delta').map((e) => e.data.delta).join('');
      expect(sent.length).toBeGreaterThan(0);
      expect(events.some((e) => e.event === 'response.output_text.delta')).toBe(false);
      expect(refusalOf(events.at(-1)!.data.response)).toBe(sent);
      expect((await metered.added(1)).outputTokens).toBeGreaterThan(0);
    });
  });
});
