// The fault table over both wire formats: every fault played by the fake OpenAI-compatible
// upstream and by the fake Anthropic one, each with a fallback (a vLLM-style upstream that
// continues a prefix) and without one, end to end over HTTP. Checked: what the client
// receives (one whole answer, or the error event with the right code) and how many upstream
// calls were made.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../../mocks/upstreams/fake-anthropic.js';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { Fault, FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog } from '../../server/gateway/catalog.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, finishReasons, readStream } from './support.js';

const ANSWER = 'The quick brown fox jumps over the lazy dog near the quiet river bank.';

let openai: FakeUpstream;
let anthropic: FakeUpstream;
let fallback: FakeUpstream;
let platform: TestPlatform;

beforeAll(async () => {
  [openai, anthropic, fallback] = await Promise.all([startFakeOpenAI({ answer: ANSWER }), startFakeAnthropic({ answer: ANSWER }), startFakeOpenAI({ answer: ANSWER })]);
  const model = (id: string, deployments: string[]) => ({ id, family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments });
  const catalog = buildCatalog(
    {
      providers: [
        // OpenAI itself: prefix none (the default), it is never asked to continue one.
        { id: 'oa', type: 'openai', base_url: `${openai.url}/v1` },
        { id: 'an', type: 'anthropic', base_url: anthropic.url },
        { id: 'fb', type: 'openai', base_url: `${fallback.url}/v1`, prefix: 'vllm' },
      ],
      deployments: [
        { id: 'd-oa', provider: 'oa', model: 'oa-model' },
        { id: 'd-an', provider: 'an', model: 'an-model' },
        { id: 'd-fb', provider: 'fb', model: 'fb-model', order: 2 },
        { id: 'd-fb-first', provider: 'fb', model: 'fb-model' },
        { id: 'd-oa-second', provider: 'oa', model: 'oa-model', order: 2 },
        { id: 'd-an-third', provider: 'an', model: 'an-model', order: 3 },
      ],
      models: [
        model('oa-fb', ['d-oa', 'd-fb']),
        model('an-fb', ['d-an', 'd-fb']),
        model('oa-solo', ['d-oa']),
        model('an-solo', ['d-an']),
        model('fb-oa-an', ['d-fb-first', 'd-oa-second', 'd-an-third']),
      ],
      routing: { tiers: { tier_1: ['oa-fb'], tier_2: ['oa-fb'], tier_3: ['oa-fb'] } },
      timeouts: { connect_ms: 1_000, first_token_ms: 400, idle_ms: 300 },
      failover: { max_attempts: 3, retry_after_cap_ms: 0, resume_streams: true },
      // Every request meets its fault: circuits stay closed; no probes in the counts.
      circuit: { failure_threshold: 1_000, failure_rate: null, probe_interval_ms: 0 },
    },
    'stream fault test',
    {},
  );
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog });
});
afterAll(async () => {
  await platform?.close();
  await Promise.all([openai, anthropic, fallback].map((u) => u?.close()));
});
beforeEach(() => {
  for (const u of [openai, anthropic, fallback]) {
    u.faults.clear();
    u.requests.length = 0;
    // Paced, so the words before a fault reach the gateway before the fault does.
    u.config.chunkIntervalMs = 5;
    u.config.spaceAfterWords = false;
    u.config.repeatWords = 0;
  }
});

const chat = (body: unknown, signal?: AbortSignal) => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(body), signal });

const dialects = [
  // Frames before the first token: a role-only chunk; message_start, content_block_start and a ping.
  { name: 'OpenAI-compatible', upstream: () => openai, model: 'oa', opening: 1 },
  { name: 'Anthropic', upstream: () => anthropic, model: 'an', opening: 3 },
];

/** Faults after the first token: [name, fault, error name and code without a fallback, resumed with one]. */
const streamFaults = (opening: number): [string, Fault, string, number, boolean][] => {
  const after = opening + 2;
  return [
    ['a stall', { type: 'stall', afterChunks: after }, 'PROVIDER_TIMEOUT', 2001, true],
    ['a stall kept alive by pings', { type: 'stall', afterChunks: after, pingEveryMs: 50 }, 'PROVIDER_TIMEOUT', 2001, true],
    ['a malformed chunk', { type: 'malformed', afterChunks: after }, 'MALFORMED_PROVIDER_STREAM', 2008, true],
    ['a cut connection', { type: 'cut', afterChunks: after }, 'CONNECTION_DROPPED', 2009, true],
    ['a missing terminator', { type: 'no_done' }, 'CONNECTION_DROPPED', 2009, true],
    ['an in-stream 5xx', { type: 'stream_error', error: 'server', afterChunks: after }, 'PROVIDER_INFERENCE_ERROR', 2013, true],
    ['an in-stream overload', { type: 'stream_error', error: 'overloaded', afterChunks: after }, 'PROVIDER_UNAVAILABLE', 2002, true],
    ['an in-stream rate limit', { type: 'stream_error', error: 'rate_limit', afterChunks: after }, 'RATE_LIMIT', 2004, true],
    // The request or the platform's key is at fault: another deployment would fail the same way.
    ['an in-stream auth error', { type: 'stream_error', error: 'auth', afterChunks: after }, 'PROVIDER_AUTH_ERROR', 2006, false],
    ['an in-stream bad request', { type: 'stream_error', error: 'bad_request', afterChunks: after }, 'PROVIDER_BAD_REQUEST', 2005, false],
  ];
};

describe.each(dialects)('$name upstream', ({ upstream, model, opening }) => {
  describe.each(streamFaults(opening))('%s after the first token', (_name, fault, name, code, resumable) => {
    it(resumable ? 'with a fallback: resumed there, one whole answer' : 'with a fallback: not resumed, the error event', async () => {
      upstream().faults.push(fault);
      const { chunks, done, text } = await readStream(await chat(ask(`${model}-fb`, { stream: true, stream_options: { include_usage: true } })));
      for (const chunk of chunks) expect(eventProblems('createGuardedChatCompletion', chunk)).toEqual([]);
      expect(upstream().requests).toHaveLength(1);
      if (!resumable) {
        expect(chunks.at(-1).error).toMatchObject({ name, code });
        expect(fallback.requests).toHaveLength(0);
        return;
      }
      expect([text, done, finishReasons(chunks)]).toEqual([ANSWER, true, ['stop']]);
      expect(chunks.some((c) => c.error)).toBe(false);
      expect(fallback.requests).toHaveLength(1);
      // Asked the vLLM way to continue the partial answer.
      const sent = fallback.requests[0].body;
      expect([sent.continue_final_message, sent.add_generation_prompt]).toEqual([true, false]);
      expect(sent.messages.at(-1).role).toBe('assistant');
      expect(sent.messages.at(-1).content.length).toBeGreaterThan(0);
      expect(ANSWER.startsWith(sent.messages.at(-1).content)).toBe(true);
      expect(chunks.at(-1).provider).toBe('fb');
    });

    it(`without a fallback: the text so far, then finish_reason "error" with ${name} (${code})`, async () => {
      upstream().faults.push(fault);
      const res = await chat(ask(`${model}-solo`, { stream: true }));
      expect(res.status).toBe(200);
      const { chunks, done, text } = await readStream(res);
      expect(text.length).toBeGreaterThan(0);
      expect(ANSWER.startsWith(text)).toBe(true);
      expect(done).toBe(false);
      const last = chunks.at(-1);
      expect(last.choices[0].finish_reason).toBe('error');
      expect(last.error).toMatchObject({ name, code, category: 'provider' });
      expect(last.trace_id).toMatch(/^trc_/);
      expect(eventProblems('createGuardedChatCompletion', last)).toEqual([]);
      expect(upstream().requests).toHaveLength(1);
    });
  });

  describe.each([
    ['a slow first token', { type: 'slow_first_token', ms: 1_500 }],
    ['opening events and pings but no token', { type: 'no_tokens', pingEveryMs: 50 }],
  ] as [string, Fault][])('%s on a stream', (_name, fault) => {
    it('with a fallback: the fallback answers the whole stream', async () => {
      upstream().faults.push(fault);
      const { chunks, done, text } = await readStream(await chat(ask(`${model}-fb`, { stream: true })));
      expect([text, done, chunks[0].provider]).toEqual([ANSWER, true, 'fb']);
      expect([upstream().requests.length, fallback.requests.length]).toEqual([1, 1]);
    });

    it('without a fallback: 408 PROVIDER_TIMEOUT before the stream starts', async () => {
      upstream().faults.push(fault);
      const res = await chat(ask(`${model}-solo`, { stream: true }));
      const body = await res.json();
      expect([res.status, body.error.name, body.error.code, body.error.retryable]).toEqual([408, 'PROVIDER_TIMEOUT', 2001, true]);
      expect(contractProblems('createGuardedChatCompletion', 408, body)).toEqual([]);
    });
  });

  it.each([false, true])('a bad request (400) is never retried elsewhere (stream: %s)', async (stream) => {
    upstream().faults.push({ type: 'bad_request' });
    const res = await chat(ask(`${model}-fb`, { stream }));
    const body = await res.json();
    expect([res.status, body.error.name, body.error.code, body.error.retryable]).toEqual([400, 'PROVIDER_BAD_REQUEST', 2005, false]);
    expect(contractProblems('createGuardedChatCompletion', 400, body)).toEqual([]);
    expect([upstream().requests.length, fallback.requests.length]).toEqual([1, 0]);
  });

  it('a plain (non-streaming) call is cancelled upstream when the client leaves', async () => {
    upstream().faults.push({ type: 'slow_first_token', ms: 5_000 });
    const client = new AbortController();
    const res = chat(ask(`${model}-fb`), client.signal).catch((error: unknown) => error);
    while (upstream().requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    client.abort();
    await res;
    const call = upstream().requests[0];
    await call.closed;
    expect(call.completed).toBe(false);
    expect(fallback.requests).toHaveLength(0);
    const { health } = platform.services.inference.gateway;
    const until = Date.now() + 2_000;
    while (health.snapshot(`d-${model}`).inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(health.snapshot(`d-${model}`).inFlight).toBe(0);
  });
});

describe('resuming on upstreams that continue a prefix differently', () => {
  it('asks OpenAI itself (prefix none) for the rest of the quoted answer in a user turn', async () => {
    fallback.faults.push({ type: 'cut', afterChunks: 4 });
    // It repeats the last words it is shown before going on: trimmed.
    openai.config.repeatWords = 2;
    const { chunks, done, text } = await readStream(await chat(ask('fb-oa-an', { stream: true })));
    expect([text, done, finishReasons(chunks)]).toEqual([ANSWER, true, ['stop']]);
    expect([openai.requests.length, anthropic.requests.length]).toEqual([1, 0]);
    const sent = openai.requests[0].body.messages;
    expect(sent.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'user']);
    expect(sent.at(-1).content).toMatch(/<<<\nThe quick/);
    expect(chunks.at(-1).provider).toBe('oa');
  });

  it('resumes on Anthropic with the prefix trimmed of its trailing space', async () => {
    // Pieces "The ", "quick ", …: the text cut off ends in a space, which Anthropic refuses in a prefill.
    fallback.config.spaceAfterWords = true;
    fallback.faults.push({ type: 'cut', afterChunks: 4 });
    openai.faults.push({ type: 'unavailable' });
    const { chunks, done, text } = await readStream(await chat(ask('fb-oa-an', { stream: true })));
    expect([text, done, finishReasons(chunks)]).toEqual([ANSWER, true, ['stop']]);
    expect(openai.requests).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
    // The words before the cut ("The quick …"), sent without the space the client already has.
    const prefill = anthropic.requests[0].body.messages.at(-1);
    expect(prefill.role).toBe('assistant');
    const sent: string = prefill.content[0].text;
    expect(sent).toMatch(/^The quick\S*( \S+)*$/);
    expect(ANSWER.startsWith(`${sent} `)).toBe(true);
    expect(chunks.at(-1).provider).toBe('an');
  });
});
