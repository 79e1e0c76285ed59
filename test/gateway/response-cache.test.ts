// The response cache end to end (server/gateway/cache), on the embedded default (in memory),
// against a fake upstream that counts its calls: an exact match on the normalised request,
// route, organization and key scope is answered without an upstream call (plain and
// streamed, the same events), `X-Cache` says so, a hit is not billed and is counted; what
// must never be cached is not; the official `openai` client gets hits too.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog } from '../../server/gateway/catalog.js';
import { createOrg, type TestOrg } from '../billing/support.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { meter } from '../support/usage.js';
import { finishReasons, readStream } from './support.js';

const ANSWER = 'Grace is a gift that is not earned.';

let upstream: FakeUpstream;
let platform: TestPlatform;
let org: TestOrg;
/** A second key of the same organization, and a key of another one. */
let sibling: string;
let stranger: TestOrg;

beforeAll(async () => {
  upstream = await startFakeOpenAI({ answer: ANSWER });
  const model = (id: string, cache?: object) => ({ id, family: 'openai', context_window: 100_000, max_output_tokens: 1_000, capabilities: { tools: true }, pricing: { input_per_1m: 10, output_per_1m: 100 }, deployments: ['d'], ...(cache ? { cache } : {}) });
  const catalog = buildCatalog(
    {
      providers: [{ id: 'up', type: 'openai', base_url: `${upstream.url}/v1` }],
      deployments: [{ id: 'd', provider: 'up', model: 'fake-model' }],
      models: [
        model('cached', { ttl_ms: 60_000 }),
        model('shared', { ttl_ms: 60_000, scope: 'organization' }),
        model('brief', { ttl_ms: 1_000 }),
        model('plain'),
      ],
      routing: { tiers: { tier_1: ['cached'], tier_2: ['cached'], tier_3: ['cached'] }, families: { openai: ['cached', 'plain'] } },
      circuit: { probe_interval_ms: 0, failure_threshold: 1_000, failure_rate: null },
    },
    'response cache test',
    {},
  );
  platform = await startTestPlatform({}, { catalog });
  org = await createOrg(platform, 'cache');
  stranger = await createOrg(platform, 'cache-other');
  sibling = (await platform.services.identity.keys.issue(org.id, { scopes: ['inference'], label: 'sibling', expiresAt: null })).plaintext;
});
afterAll(async () => {
  await platform?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.faults.clear();
  upstream.config.answer = ANSWER;
});

let counter = 0;
/** A question no earlier test asked (the cache outlives each test). */
const fresh = () => `Question ${++counter} of this run ${Date.now()}: what is grace?`;
const question = (text: string, extra: Record<string, unknown> = {}) => ({ model: 'cached', temperature: 0, messages: [{ role: 'user', content: text }], ...extra });

async function chat(body: unknown, options: { key?: string; mode?: string; path?: string } = {}) {
  const headers: Record<string, string> = options.mode ? { 'x-response-cache': options.mode } : {};
  const res = await platform.api(options.path ?? '/ai/v2/guarded/chat/completions', { method: 'POST', key: options.key ?? org.key, headers, body: JSON.stringify(body) });
  return { res, cache: res.headers.get('x-cache'), calls: upstream.requests.length };
}

/** The answer without what identifies this response (its id, its time). */
const content = ({ id: _id, created: _created, ...rest }: { id: string; created: number }) => rest;

describe('plain answers', () => {
  it('answers the same deterministic request from the cache: no upstream call, the same answer under its own id', async () => {
    const body = question(fresh());
    const first = await chat(body);
    const firstJson = await first.res.json();
    expect([first.res.status, first.cache]).toEqual([200, 'miss']);
    const second = await chat(body);
    const secondJson = await second.res.json();
    expect([second.res.status, second.cache]).toEqual([200, 'hit']);
    expect(second.calls).toBe(first.calls);
    expect(contractProblems('createGuardedChatCompletion', 200, secondJson)).toEqual([]);
    expect(content(secondJson)).toEqual(content(firstJson));
    expect(secondJson.id).not.toBe(firstJson.id);
    expect(secondJson.id).toBe(`chatcmpl-${second.res.headers.get('x-trace-id')!.replace(/^trc_/, '')}`);
  });

  it('matches the normalised request: key order, developer/system, stop as a string, max_completion_tokens', async () => {
    const text = fresh();
    const a = await chat({ model: 'cached', temperature: 0, max_tokens: 80, stop: ['END'], messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }] });
    expect(a.cache).toBe('miss');
    const b = await chat({ messages: [{ content: 'Be brief.', role: 'developer' }, { content: text, role: 'user' }], stop: 'END', max_completion_tokens: 80, temperature: 0, model: 'cached' });
    expect([b.cache, b.calls]).toEqual(['hit', a.calls]);
  });

  it('misses on anything that changes the answer: the messages, the model, sampling, the route, the answer shape', async () => {
    const text = fresh();
    const calls = upstream.requests.length;
    await chat(question(text));
    const variants: [unknown, string?][] = [
      [question(`${text} Really?`)],
      [question(text, { model: 'shared' })],
      [question(text, { max_tokens: 7 })],
      [question(text, { temperature: 0, top_p: 0.5 })],
      [question(text, { tradition: 'catholic' })],
      [question(text, { tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] })],
      [question(text, { stream: true })],
      [question(text), '/ai/v1/chat/completions'],
    ];
    for (const [body, path] of variants) {
      const { res, cache } = await chat(body, { path });
      await res.arrayBuffer();
      expect(cache, JSON.stringify(body)).toBe('miss');
    }
    expect(upstream.requests.length - calls).toBe(1 + variants.length);
  });

  it('shares answers between the keys of an organization only when the model says so, never across organizations', async () => {
    const text = fresh();
    await chat(question(text));
    await chat(question(text, { model: 'shared' }));
    expect((await chat(question(text), { key: sibling })).cache).toBe('miss');
    expect((await chat(question(text, { model: 'shared' }), { key: sibling })).cache).toBe('hit');
    expect((await chat(question(text, { model: 'shared' }), { key: stranger.key })).cache).toBe('miss');
  });

  it('caches a sampled request only when the caller opts in (X-Response-Cache: on)', async () => {
    const text = fresh();
    const sampled = { model: 'cached', messages: [{ role: 'user', content: text }] };
    for (const body of [sampled, { ...sampled, temperature: 0.7 }]) {
      const calls = upstream.requests.length;
      const a = await chat(body);
      const b = await chat(body);
      expect([a.cache, b.cache, upstream.requests.length - calls]).toEqual([null, null, 2]);
      expect((await chat(body, { mode: 'on' })).cache).toBe('miss');
      expect((await chat(body, { mode: 'on' })).cache).toBe('hit');
    }
  });

  it('off bypasses the cache; refresh asks the model again and keeps the new answer', async () => {
    const body = question(fresh());
    await chat(body);
    const off = await chat(body, { mode: 'off' });
    expect([off.cache, off.calls]).toEqual([null, upstream.requests.length]);
    upstream.config.answer = 'A newer answer.';
    const calls = upstream.requests.length;
    const refreshed = await chat(body, { mode: 'refresh' });
    expect([refreshed.cache, refreshed.calls - calls]).toEqual(['miss', 1]);
    const after = await chat(body);
    expect(after.cache).toBe('hit');
    expect((await after.res.json()).choices[0].message.content).toBe('A newer answer.');
  });

  it('refuses an unknown X-Response-Cache value in the operation shape', async () => {
    const { res } = await chat(question(fresh()), { mode: 'always' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect((await res.json()).trace_id).toMatch(/^trc_/);
  });

  it('never applies to a model without cache in the config (no X-Cache header)', async () => {
    const body = question(fresh(), { model: 'plain' });
    const a = await chat(body, { mode: 'on' });
    const b = await chat(body, { mode: 'on' });
    expect([a.cache, b.cache, b.calls - a.calls]).toEqual([null, null, 1]);
    // model_family spreads over a cached and an uncached model: not cached either.
    expect((await chat({ ...question(fresh()), model: undefined, model_family: 'openai' }, { mode: 'on' })).cache).toBe(null);
  });

  it('forgets an answer after its model TTL', async () => {
    const body = question(fresh(), { model: 'brief' });
    expect((await chat(body)).cache).toBe('miss');
    expect((await chat(body)).cache).toBe('hit');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await chat(body)).cache).toBe('miss');
  });
});

describe('streams', () => {
  it('replays a cached stream as a stream: the same events, [DONE], no upstream call', async () => {
    const body = question(fresh(), { stream: true, stream_options: { include_usage: true } });
    const first = await chat(body);
    const a = await readStream(first.res);
    const second = await chat(body);
    expect([first.cache, second.cache]).toEqual(['miss', 'hit']);
    expect(second.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const b = await readStream(second.res);
    expect(second.calls).toBe(first.calls);
    expect([b.text, b.done, finishReasons(b.chunks)]).toEqual([ANSWER, true, ['stop']]);
    expect(b.chunks.map(content)).toEqual(a.chunks.map(content));
    expect(new Set(b.chunks.map((c) => c.id)).size).toBe(1);
    expect(b.chunks[0].id).not.toBe(a.chunks[0].id);
    for (const chunk of b.chunks) expect(eventProblems('createGuardedChatCompletion', chunk)).toEqual([]);
    // A streamed answer does not answer the plain request, nor the other way round.
    expect((await chat({ ...body, stream: false })).cache).toBe('miss');
  });

  it('does not keep a stream that broke, or that its client left', async () => {
    const body = question(fresh(), { stream: true });
    upstream.faults.push({ type: 'cut', afterChunks: 3 });
    // Frames apart, so that the first tokens are relayed before the cut.
    upstream.config.chunkIntervalMs = 20;
    const cut = await chat(body);
    const broken = await readStream(cut.res);
    upstream.config.chunkIntervalMs = 0;
    expect([cut.res.status, cut.cache]).toEqual([200, 'miss']);
    expect(broken.text.length).toBeGreaterThan(0);
    expect(broken.chunks.at(-1).error).toBeDefined();
    const again = await chat(body);
    expect(again.cache).toBe('miss');
    expect((await readStream(again.res)).text).toBe(ANSWER);

    const left = question(fresh(), { stream: true });
    upstream.config.chunkIntervalMs = 50;
    try {
      const client = new AbortController();
      const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(left), signal: client.signal });
      const reader = res.body!.getReader();
      await reader.read();
      client.abort();
      await upstream.requests.at(-1)!.closed;
    } finally {
      upstream.config.chunkIntervalMs = 0;
    }
    expect((await chat(left)).cache).toBe('miss');
  });
});

describe('never cached', () => {
  it('errors: the request after a failure asks the model', async () => {
    const body = question(fresh());
    upstream.faults.push({ type: 'bad_request' });
    const failed = await chat(body);
    expect([failed.res.status, failed.cache]).toEqual([400, null]);
    const next = await chat(body);
    expect([next.res.status, next.cache]).toEqual([200, 'miss']);
  });

  it.each([false, true])('content-filtered answers (stream: %s)', async (stream) => {
    const body = question(fresh(), { stream });
    upstream.faults.push({ type: 'content_filter_finish' });
    const filtered = await chat(body);
    const finish = stream ? finishReasons((await readStream(filtered.res)).chunks) : [(await filtered.res.json()).choices[0].finish_reason];
    expect(finish).toEqual(['content_filter']);
    const next = await chat(body);
    expect(next.cache).toBe('miss');
    await next.res.arrayBuffer();
    expect((await chat(body)).cache).toBe('hit');
  });
});

describe('billing and metrics', () => {
  const lookups = async (result: string) => {
    const text = await (await platform.mgmt('/api/v1/metrics')).text();
    return Number(new RegExp(`gateway_response_cache_lookups_total\\{model="cached",result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  };

  it('bills the miss and not the hit, and counts both', async () => {
    const body = question(fresh());
    const [hits, misses] = [await lookups('hit'), await lookups('miss')];
    const m = await meter(platform, { organizationId: org.id });
    const miss = await (await chat(body)).res.json();
    const hit = await chat(body);
    expect(hit.cache).toBe('hit');
    await hit.res.arrayBuffer();
    // One more request settles after the hit: the meter must then hold exactly the miss's call.
    const added = await m.added(1);
    expect(added.inputTokens).toBe(miss.usage.prompt_tokens);
    expect(added.costMicros).toBe(BigInt(miss.usage.prompt_tokens * 10 + miss.usage.completion_tokens * 100));
    expect([await lookups('hit'), await lookups('miss')]).toEqual([hits + 1, misses + 1]);
  });
});

describe('the openai client', () => {
  it('gets hits, plain and streamed, and reads X-Cache', async () => {
    const client = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v2`, apiKey: org.key, maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: fresh() }];
    const opts = { headers: { 'X-Response-Cache': 'on' } };
    const first = await client.chat.completions.create({ model: 'cached', messages }, opts).withResponse();
    const calls = upstream.requests.length;
    const second = await client.chat.completions.create({ model: 'cached', messages }, opts).withResponse();
    expect([first.response.headers.get('x-cache'), second.response.headers.get('x-cache')]).toEqual(['miss', 'hit']);
    expect(second.data.choices[0].message.content).toBe(first.data.choices[0].message.content);
    expect(upstream.requests.length).toBe(calls);

    const streamed = async () => {
      const { data, response } = await client.chat.completions.create({ model: 'cached', messages, stream: true }, opts).withResponse();
      let text = '';
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
      return { text, cache: response.headers.get('x-cache') };
    };
    expect(await streamed()).toEqual({ text: ANSWER, cache: 'miss' });
    const before = upstream.requests.length;
    expect(await streamed()).toEqual({ text: ANSWER, cache: 'hit' });
    expect(upstream.requests.length).toBe(before);
  });
});
