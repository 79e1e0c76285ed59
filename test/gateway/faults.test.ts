// Every upstream fault the gateway must survive, end to end: the platform over HTTP in
// front of real HTTP fake upstreams (mocks/upstreams), checking what the client receives
// and how many upstream calls were made.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startFakeAnthropic } from '../../mocks/upstreams/fake-anthropic.js';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog } from '../../server/gateway/catalog.js';
import { estimateTokens } from '../../server/providers/local/tokens.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, finishReasons, readStream } from './support.js';

const ANSWER = 'The quick brown fox jumps over the lazy dog near the quiet river bank.';

interface Upstreams {
  primary: FakeUpstream;
  fallback: FakeUpstream;
  claude: FakeUpstream;
}

/** `m`: primary (preferred), fallback, then Claude. `solo`: one deployment on the primary upstream. */
function catalogFor(up: Upstreams, circuit: Record<string, number | null>) {
  return buildCatalog(
    {
      providers: [
        { id: 'primary', type: 'openai', base_url: `${up.primary.url}/v1` },
        // A vLLM-style upstream: it continues a prefix when asked with its flags.
        { id: 'fallback', type: 'openai', base_url: `${up.fallback.url}/v1`, prefix: 'vllm' },
        { id: 'claude', type: 'anthropic', base_url: up.claude.url },
      ],
      deployments: [
        { id: 'd-primary', provider: 'primary', model: 'primary-model', order: 1 },
        { id: 'd-fallback', provider: 'fallback', model: 'fallback-model', order: 2 },
        { id: 'd-claude', provider: 'claude', model: 'claude-model', order: 3 },
        { id: 'd-solo', provider: 'primary', model: 'solo-model' },
        { id: 'd-lonely', provider: 'primary', model: 'lonely-model' },
        { id: 'd-embed', provider: 'fallback', model: 'embed-model' },
      ],
      models: [
        { id: 'm', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, capabilities: { tools: true }, deployments: ['d-primary', 'd-fallback', 'd-claude'] },
        { id: 'solo', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments: ['d-solo'] },
        // Kept out of rotation for 30 s by one test's Retry-After.
        { id: 'lonely', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments: ['d-lonely'] },
        { id: 'emb', family: 'openai', type: 'embedding', context_window: 1_000, dimensions: 8, shortenable: true, deployments: ['d-embed'] },
      ],
      routing: { tiers: { tier_1: ['m'], tier_2: ['m'], tier_3: ['m'] } },
      timeouts: { connect_ms: 1_000, first_token_ms: 400, idle_ms: 300 },
      failover: { max_attempts: 3, retry_after_cap_ms: 1_500, resume_streams: true, routes: { createChatCompletionV1: { resume_streams: false } } },
      // No probes nor trial calls in the counts unless a suite asks for them.
      circuit: { cooldown_ms: 60_000, probe_interval_ms: 0, trial_ms: 0, ...circuit },
    },
    'fault test',
    {},
  );
}

async function setUp(circuit: Record<string, number | null>) {
  const up = { primary: await startFakeOpenAI({ answer: ANSWER }), fallback: await startFakeOpenAI({ answer: ANSWER }), claude: await startFakeAnthropic({ answer: ANSWER }) };
  const platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: catalogFor(up, circuit) });
  return { up, platform };
}

describe('upstream faults (circuits kept closed, so every request meets its fault)', () => {
  let up: Upstreams;
  let platform: TestPlatform;
  const chat = (body: unknown) => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(body) });
  const calls = () => [up.primary.requests.length, up.fallback.requests.length, up.claude.requests.length];

  beforeAll(async () => {
    ({ up, platform } = await setUp({ failure_threshold: 1_000, failure_rate: null }));
    // The first request pays for connection set-up; timings below are for warm paths.
    await chat(ask('m'));
  });
  afterAll(async () => {
    await platform?.close();
    await Promise.all(Object.values(up ?? {}).map((u) => u.close()));
  });
  beforeEach(async () => {
    for (const u of Object.values(up)) {
      u.faults.clear();
      u.requests.length = 0;
      u.config.chunkIntervalMs = 0;
      u.config.omitUsage = false;
      u.config.spaceAfterWords = false;
      u.config.repeatWords = 0;
    }
    // A Retry-After keeps its deployment out of rotation for a while: let it pass.
    const { health, catalog } = platform.services.inference.gateway;
    const until = Date.now() + 3_000;
    const used = [...catalog.deployments.keys()].filter((id) => id !== 'd-lonely');
    while (!used.every((id) => health.available(id))) {
      if (Date.now() > until) throw new Error(`a deployment stays unavailable: ${used.filter((id) => !health.available(id)).join(', ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  describe('before the first byte: fail over to the next deployment', () => {
    it.each([
      ['429 without Retry-After', { type: 'rate_limit' }],
      ['429 with Retry-After', { type: 'rate_limit', retryAfter: '1' }],
      ['500 once', { type: 'server_error' }],
      ['503', { type: 'unavailable' }],
      ['a reset before headers', { type: 'reset' }],
      ['no answer at all', { type: 'hang' }],
      ['a slow first token', { type: 'slow_first_token', ms: 1_500 }],
    ] as const)('%s', async (_name, fault) => {
      up.primary.faults.push(fault);
      const started = Date.now();
      const res = await chat(ask('m'));
      const body = await res.json();
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body).toMatchObject({ model: 'm', provider: 'fallback', choices: [{ message: { content: ANSWER }, finish_reason: 'stop' }] });
      expect(calls()).toEqual([1, 1, 0]);
      // A Retry-After is for the deployment that sent it: a peer takes the request at once.
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it('keeps failing over while the primary stays down (503 for good)', async () => {
      up.primary.faults.always({ type: 'unavailable' });
      for (let i = 0; i < 3; i++) expect((await chat(ask('m'))).status).toBe(200);
      expect(calls()).toEqual([3, 3, 0]);
    });

    it('fails over a stream that breaks before its first chunk', async () => {
      up.primary.faults.push({ type: 'unavailable' });
      const res = await chat(ask('m', { stream: true }));
      const { chunks, done, text } = await readStream(res);
      expect(res.status).toBe(200);
      expect(text).toBe(ANSWER);
      expect(done).toBe(true);
      expect(chunks[0].provider).toBe('fallback');
      expect(calls()).toEqual([1, 1, 0]);
    });
  });

  describe('what cannot succeed elsewhere is never retried', () => {
    it.each([
      ['context length', { type: 'context_length' }, 400, 'CONTEXT_WINDOW_EXCEEDED'],
      ['content filter', { type: 'content_filter' }, 422, 'CONTENT_FILTERED'],
      ['upstream auth failure', { type: 'bad_key' }, 500, 'PROVIDER_AUTH_ERROR'],
    ] as const)('%s: %i %s after one call', async (_name, fault, status, name) => {
      up.primary.faults.push(fault);
      const res = await chat(ask('m'));
      const body = await res.json();
      expect(res.status).toBe(status);
      expect(body.error.name).toBe(name);
      expect(body.trace_id).toMatch(/^trc_/);
      expect(contractProblems('createGuardedChatCompletion', status, body)).toEqual([]);
      // Upstream error text and keys never reach the caller.
      expect(JSON.stringify(body)).not.toMatch(/Incorrect API key|maximum context length is 8192/);
      expect(calls()).toEqual([1, 0, 0]);
    });
  });

  describe('when every deployment fails', () => {
    it('is 503 PROVIDER_UNAVAILABLE, retryable, after trying each', async () => {
      for (const u of Object.values(up)) u.faults.always({ type: 'unavailable' });
      const res = await chat(ask('m'));
      const body = await res.json();
      expect([res.status, body.error.name, body.error.retryable]).toEqual([503, 'PROVIDER_UNAVAILABLE', true]);
      expect(calls()).toEqual([1, 1, 1]);
    });

    it('is 500 PROVIDER_INFERENCE_ERROR (2013), retryable, when each one answers 500', async () => {
      for (const u of Object.values(up)) u.faults.always({ type: 'server_error' });
      const res = await chat(ask('m'));
      const body = await res.json();
      expect(res.status).toBe(500);
      expect(body.error).toMatchObject({ name: 'PROVIDER_INFERENCE_ERROR', code: 2013, retryable: true, category: 'provider' });
      expect(body.trace_id).toMatch(/^trc_/);
      expect(contractProblems('createGuardedChatCompletion', 500, body)).toEqual([]);
      expect(JSON.stringify(body)).not.toMatch(/The server had an error/);
      expect(calls()).toEqual([1, 1, 1]);
    });

    it('is 408 PROVIDER_TIMEOUT when none answers in time', async () => {
      for (const u of Object.values(up)) u.faults.always({ type: 'hang' });
      const res = await chat(ask('m'));
      const body = await res.json();
      expect([res.status, body.error.name, body.error.code, body.error.retryable]).toEqual([408, 'PROVIDER_TIMEOUT', 2001, true]);
    });

    it('passes a long upstream Retry-After on: 429 RATE_LIMIT with Retry-After, one call', async () => {
      up.primary.faults.push({ type: 'rate_limit', retryAfter: '30' });
      const res = await chat(ask('lonely'));
      const body = await res.json();
      expect([res.status, body.error.name, body.error.code, res.headers.get('retry-after')]).toEqual([429, 'RATE_LIMIT', 2004, '30']);
      expect(calls()).toEqual([1, 0, 0]);
    });

    it('waits out a short upstream Retry-After on the only deployment, then retries it', async () => {
      up.primary.faults.push({ type: 'rate_limit', retryAfter: '1' });
      const started = Date.now();
      const res = await chat(ask('solo'));
      expect(res.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(calls()).toEqual([2, 0, 0]);
    });
  });

  describe('after the first byte: resume elsewhere, so the client gets one whole answer', () => {
    // Paced chunks, so the words before a fault reach the gateway before the fault does.
    beforeEach(() => {
      up.primary.config.chunkIntervalMs = 5;
    });

    it.each([
      ['a cut connection', { type: 'cut', afterChunks: 4 }],
      ['a stall', { type: 'stall', afterChunks: 4 }],
      ['a malformed chunk', { type: 'malformed', afterChunks: 4 }],
      ['a missing [DONE]', { type: 'no_done' }],
      ['an in-stream rate limit', { type: 'stream_error', error: 'rate_limit', afterChunks: 4 }],
    ] as const)('%s', async (_name, fault) => {
      up.primary.faults.push(fault);
      const res = await chat(ask('m', { stream: true, stream_options: { include_usage: true } }));
      const { chunks, done, text } = await readStream(res);
      expect(text).toBe(ANSWER);
      expect(done).toBe(true);
      for (const chunk of chunks) expect(eventProblems('createGuardedChatCompletion', chunk)).toEqual([]);
      expect(finishReasons(chunks)).toEqual(['stop']);
      expect(chunks.some((c) => c.error)).toBe(false);
      expect(calls()).toEqual([1, 1, 0]);
      // The fallback was asked to continue the partial answer, not to start over.
      const sent = up.fallback.requests[0].body.messages;
      expect(sent.at(-1).role).toBe('assistant');
      expect(ANSWER.startsWith(sent.at(-1).content)).toBe(true);
      expect(sent.at(-1).content.length).toBeGreaterThan(0);
      // The stream started on the primary; its finish and usage chunks name who finished it.
      expect(chunks[0].provider).toBe('primary');
      const finished = chunks.find((c) => c.choices?.[0]?.finish_reason);
      const usage = chunks.at(-1);
      expect(usage.usage.completion_tokens).toBeGreaterThan(0);
      expect([finished.provider, finished.model, usage.provider, usage.model]).toEqual(['fallback', 'm', 'fallback', 'm']);
    });

    it('asks a fallback that refuses the prefix (400) again at once, for the rest of the quoted answer in a user turn', async () => {
      up.primary.faults.push({ type: 'cut', afterChunks: 4 });
      up.fallback.faults.push({ type: 'refuse_prefix' });
      // The fallback starts by repeating the end of what it is shown: the client does not get it twice.
      up.fallback.config.repeatWords = 1;
      const res = await chat(ask('m', { stream: true }));
      const { done, text } = await readStream(res);
      expect(text).toBe(ANSWER);
      expect(done).toBe(true);
      expect(calls()).toEqual([1, 2, 0]);
      const [prefixed, asked] = up.fallback.requests.map((r) => r.body);
      expect(prefixed.messages.at(-1).role).toBe('assistant');
      expect(asked.messages.at(-1).role).toBe('user');
      expect(asked.messages.at(-1).content).toContain(prefixed.messages.at(-1).content);
      expect(asked.continue_final_message).toBeUndefined();
      expect(res.headers.get('x-gateway-route')).toBe('model=m; deployment=d-primary; outcome=ok');
    });

    it('ends with finish_reason "error", the enriched error and the trace id when no deployment can continue', async () => {
      up.primary.faults.push({ type: 'cut', afterChunks: 4 });
      const res = await chat(ask('solo', { stream: true }));
      const { chunks, done, text } = await readStream(res);
      expect(res.status).toBe(200);
      expect(text.length).toBeGreaterThan(0);
      expect(ANSWER.startsWith(text)).toBe(true);
      expect(done).toBe(false);
      const last = chunks.at(-1);
      expect(last.choices[0].finish_reason).toBe('error');
      expect([last.id, last.model]).toEqual([chunks[0].id, 'solo']);
      expect(last.error).toMatchObject({ name: 'CONNECTION_DROPPED', retryable: true, category: 'provider' });
      expect(last.trace_id).toMatch(/^trc_/);
      expect(eventProblems('createGuardedChatCompletion', last)).toEqual([]);
    });

    it('does not resume on a route configured not to (failover.routes), ending with the error instead', async () => {
      up.primary.faults.push({ type: 'cut', afterChunks: 4 });
      const res = await platform.api('/ai/v1/chat/completions', { method: 'POST', body: JSON.stringify(ask('m', { stream: true })) });
      const { chunks, done } = await readStream(res);
      expect(done).toBe(false);
      expect(chunks.at(-1).error.name).toBe('CONNECTION_DROPPED');
      expect(calls()).toEqual([1, 0, 0]);
    });

    it('cancels the upstream call when the client goes away', async () => {
      up.primary.config.chunkIntervalMs = 50;
      const controller = new AbortController();
      const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(ask('m', { stream: true })), signal: controller.signal });
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      const upstreamCall = up.primary.requests[0];
      await upstreamCall.closed;
      expect(upstreamCall.completed).toBe(false);
      expect(calls()).toEqual([1, 0, 0]);
    });

    it('reports an in-stream upstream rate limit it cannot recover from as 2004 RATE_LIMIT', async () => {
      up.primary.faults.push({ type: 'stream_error', error: 'rate_limit', afterChunks: 3 });
      const { chunks } = await readStream(await chat(ask('solo', { stream: true })));
      expect(chunks.at(-1).error).toMatchObject({ code: 2004, name: 'RATE_LIMIT' });
      expect(chunks.at(-1).choices[0].finish_reason).toBe('error');
    });

    it('ends a filtered stream with finish_reason content_filter and no error object, not retried', async () => {
      up.primary.faults.push({ type: 'content_filter_finish' });
      const { chunks, done } = await readStream(await chat(ask('m', { stream: true })));
      expect(done).toBe(true);
      expect(finishReasons(chunks)).toEqual(['content_filter']);
      expect(chunks.some((c) => c.error)).toBe(false);
      expect(calls()).toEqual([1, 0, 0]);
    });
  });

  describe('usage an upstream does not report', () => {
    it('is estimated for a plain answer and for embeddings, never billed as nothing', async () => {
      up.primary.config.omitUsage = true;
      up.fallback.config.omitUsage = true;
      const body = await (await chat(ask('m'))).json();
      expect(body.choices[0].message.content).toBe(ANSWER);
      expect(body.usage.completion_tokens).toBe(estimateTokens(ANSWER));
      expect(body.usage.prompt_tokens).toBeGreaterThan(estimateTokens('Tell me about the fox.'));
      const res = await platform.api('/ai/v2/embeddings', { method: 'POST', body: JSON.stringify({ model: 'emb', input: ['grace and peace', 'hope'] }) });
      const embedded = await res.json();
      expect(up.fallback.requests.at(-1)!.body).toMatchObject({ model: 'embed-model' });
      expect(embedded.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 });
    });
  });

  describe('embeddings', () => {
    it('are served by the embedding provider, base64 as little-endian float32', async () => {
      const post = (body: unknown) => platform.api('/ai/v2/embeddings', { method: 'POST', body: JSON.stringify(body) });
      const floats = await (await post({ model: 'emb', input: ['a', 'b'], dimensions: 4 })).json();
      const encoded = await (await post({ model: 'emb', input: ['a', 'b'], dimensions: 4, encoding_format: 'base64' })).json();
      expect(floats.data[0].embedding).toHaveLength(4);
      const bytes = Buffer.from(encoded.data[0].embedding, 'base64');
      const decoded = Array.from({ length: 4 }, (_, i) => bytes.readFloatLE(i * 4));
      decoded.forEach((value, i) => expect(value).toBeCloseTo(floats.data[0].embedding[i], 6));
      expect(up.fallback.requests.at(-1)!.body).toMatchObject({ model: 'embed-model', dimensions: 4 });
      // Both calls are in the metrics: upstream calls, their latency and the tokens.
      const metrics = await (await platform.mgmt('/api/v1/metrics')).text();
      expect(metrics).toMatch(/gateway_upstream_calls_total\{deployment="d-embed",outcome="ok"\} [2-9]/);
      expect(metrics).toMatch(/gateway_upstream_duration_seconds_count\{deployment="d-embed"\} [2-9]/);
      expect(metrics).toMatch(/gateway_tokens_total\{model="emb",kind="prompt"\} [1-9]/);
    });

    it('are 503 when their provider is down, with no failover', async () => {
      up.fallback.faults.always({ type: 'unavailable' });
      const res = await platform.api('/ai/v2/direct/embeddings', { method: 'POST', body: JSON.stringify({ model: 'emb', input: 'x' }) });
      const body = await res.json();
      expect([res.status, body.error.name]).toEqual([503, 'EMBEDDING_PROVIDER_UNAVAILABLE']);
      expect(calls()).toEqual([0, 1, 0]);
    });
  });
});

describe('a flapping primary', () => {
  let up: Upstreams;
  let platform: TestPlatform;
  beforeAll(async () => {
    ({ up, platform } = await setUp({ failure_threshold: 3 }));
  });
  afterAll(async () => {
    await platform?.close();
    await Promise.all(Object.values(up ?? {}).map((u) => u.close()));
  });

  it('opens its circuit: traffic moves to the fallback and health shows the provider degraded', async () => {
    // Down, up, down, up, …: failures never come three in a row.
    up.primary.faults.push(...Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? ({ type: 'unavailable' } as const) : ({ type: 'slow_first_token', ms: 0 } as const))));
    const chat = () => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(ask('m')) });
    for (let i = 0; i < 12; i++) expect((await chat()).status).toBe(200);
    const primaryCalls = up.primary.requests.length;
    expect(primaryCalls).toBeLessThan(12);
    for (let i = 0; i < 3; i++) expect((await chat()).status).toBe(200);
    expect(up.primary.requests.length).toBe(primaryCalls);
    const health = await (await platform.mgmt('/api/v1/health')).json();
    const primary = health.data.gateways.find((g: { id: string }) => g.id === 'provider:primary');
    expect(primary.status).not.toBe('healthy');
    const metrics = await (await platform.mgmt('/api/v1/metrics')).text();
    expect(metrics).toMatch(/gateway_circuit_state\{deployment="d-primary",provider="primary"\} 2/);
    expect(metrics).toMatch(/gateway_upstream_calls_total\{deployment="d-primary",outcome="unavailable"\} [1-9]/);
    expect(metrics).toMatch(/http_requests_total\{api="api",operation="createGuardedChatCompletion",status="200"\} 15/);
  });
});

describe('recovery', () => {
  let up: Upstreams;
  let platform: TestPlatform;
  beforeAll(async () => {
    ({ up, platform } = await setUp({ failure_threshold: 2, cooldown_ms: 60_000, probe_interval_ms: 100, trial_ms: 50, trial_max_ms: 200 }));
  });
  afterAll(async () => {
    await platform?.close();
    await Promise.all(Object.values(up ?? {}).map((u) => u.close()));
  });

  it('tries an open circuit with one-token calls long before the cooldown ends, and sends traffic back once one is answered', async () => {
    const chat = () => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(ask('m')) });
    up.primary.faults.always({ type: 'unavailable' });
    for (let i = 0; i < 3; i++) expect((await chat()).status).toBe(200);
    const { health } = platform.services.inference.gateway;
    expect(health.circuit('d-primary')).not.toBe('closed');
    // GET /models answers all along: it no longer reopens an overloaded upstream.
    const trials = () => up.primary.requests.filter((r) => r.method === 'POST' && r.body.max_tokens === 1);
    await vi.waitFor(() => expect(trials().length).toBeGreaterThanOrEqual(2), { timeout: 3_000, interval: 20 });
    expect(health.circuit('d-primary')).not.toBe('closed');
    up.primary.faults.clear();
    const healed = Date.now();
    await vi.waitFor(() => expect(health.circuit('d-primary')).toBe('closed'), { timeout: 3_000, interval: 10 });
    expect(Date.now() - healed).toBeLessThan(1_000);
    expect(trials().at(-1)!.body).toMatchObject({ model: 'primary-model', messages: [{ role: 'user', content: 'Hi' }] });
    const body = await (await chat()).json();
    expect(body.provider).toBe('primary');
  });

  it('probe every provider, so a misconfigured one shows offline before traffic finds it, checked when its probe ran', async () => {
    up.claude.faults.always({ type: 'bad_key' });
    const { health } = platform.services.inference.gateway;
    const since = Date.now();
    const until = Date.now() + 2_000;
    while (!(health.snapshot('d-claude').lastProbe?.error && health.snapshot('d-claude').lastProbe!.at >= since) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const report = await (await platform.mgmt('/api/v1/health')).json();
    const status = (id: string) => report.data.gateways.find((g: { id: string }) => g.id === `provider:${id}`);
    expect(status('claude').status).toBe('offline');
    expect(status('primary').status).toBe('healthy');
    // Its circuit never saw traffic: the probe alone tells.
    expect(health.circuit('d-claude')).toBe('closed');
    expect(up.claude.requests.every((r) => r.method === 'GET')).toBe(true);
    expect(status('claude').lastHealthCheck).toBeGreaterThanOrEqual(since);
    expect(status('claude').lastHealthCheck).toBeLessThanOrEqual(health.snapshot('d-claude').lastProbe!.at);
    up.claude.faults.clear();
  });
});
