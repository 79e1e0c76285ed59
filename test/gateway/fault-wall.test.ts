// The fault wall (issue 26, after the public failoverbench catalogue): a misbehaving
// OpenAI-compatible upstream, 16 scenarios, each primary model with one fallback model in a
// GATEWAY_CONFIG file, driven through the official `openai` client against the running
// server. Each scenario asserts the rescue, or, where no honest rescue exists, a clean error
// naming the real cause; the `X-Gateway-Route` header says what was tried. Timeouts and the
// trial schedule are short so the wall runs in seconds.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { Fault, FakeUpstream } from '../../mocks/upstreams/faults.js';
import { loadCatalog } from '../../server/gateway/catalog.js';
import { routeOf, type RouteAttempt } from '../../sdk/src/core/headers.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { meter } from '../support/usage.js';

const ANSWER = 'The quick brown fox jumps over the lazy dog near the quiet river bank.';
const PRIMARY_PRICE = { input_per_1m: 1, output_per_1m: 2 };
const FALLBACK_PRICE = { input_per_1m: 3, output_per_1m: 15 };

/** One primary model per scenario (deployment `p-<name>` on the primary upstream) and its fallback model (`f-<name>`, on the fallback upstream). */
const SCENARIOS = ['ra', 'rl', 'once', 'down', 'reset', 'hang', 'slow', 'cut', 'stall', 'malformed', 'nodone', 'ctx', 'cf', 'strict', 'refuse', 'flap', 'acct'];

function gatewayConfig(primary: FakeUpstream, fallback: FakeUpstream) {
  const fallbackOf = (name: string) => {
    if (name === 'ctx') return { context_window: 2_000, context_window_fallbacks: ['f-ctx'] };
    if (name === 'cf') return { content_policy_fallbacks: ['f-cf'] };
    return { fallbacks: [`f-${name}`] };
  };
  return {
    providers: [
      // OpenAI-like: it cannot continue an assistant prefix (prefix none, the default).
      { id: 'primary', type: 'openai', base_url: `${primary.url}/v1` },
      // vLLM-like: it continues a prefix when asked with vLLM's flags.
      { id: 'fallback', type: 'openai', base_url: `${fallback.url}/v1`, prefix: 'vllm' },
    ],
    deployments: SCENARIOS.flatMap((name) => [
      { id: `p-${name}`, provider: 'primary', model: `primary-${name}` },
      { id: `f-${name}`, provider: 'fallback', model: `fallback-${name}` },
    ]),
    models: SCENARIOS.flatMap((name) => [
      { id: `p-${name}`, family: 'openai', context_window: 10_000, max_output_tokens: 1_000, pricing: PRIMARY_PRICE, deployments: [`p-${name}`], ...fallbackOf(name) },
      { id: `f-${name}`, family: 'anthropic', context_window: 100_000, max_output_tokens: 1_000, pricing: FALLBACK_PRICE, deployments: [`f-${name}`] },
    ]),
    routing: { tiers: { tier_1: ['p-once'], tier_2: ['p-once'], tier_3: ['p-once'] } },
    timeouts: { connect_ms: 500, first_token_ms: 300, idle_ms: 300 },
    failover: { max_attempts: 4, retry_after_cap_ms: 1_500, retries: 1, resume_streams: true },
    circuit: { failure_threshold: 3, failure_rate: 0.5, cooldown_ms: 60_000, probe_interval_ms: 0, trial_ms: 100, trial_max_ms: 400, trial_timeout_ms: 500 },
  };
}

let primary: FakeUpstream;
let fallback: FakeUpstream;
let platform: TestPlatform;
let client: OpenAI;
let dir: string;

beforeAll(async () => {
  [primary, fallback] = await Promise.all([startFakeOpenAI({ answer: ANSWER }), startFakeOpenAI({ answer: ANSWER })]);
  dir = mkdtempSync(join(tmpdir(), 'fault-wall-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(gatewayConfig(primary, fallback)));
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: loadCatalog({ GATEWAY_CONFIG: file }) });
  // maxRetries 0: what the client sees is the gateway's own rescue, not the client's retries.
  client = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v2`, apiKey: platform.adminKey, maxRetries: 0 });
  // The first request pays for connection set-up.
  await client.chat.completions.create({ model: 'p-once', messages: question });
});
afterAll(async () => {
  await platform?.close();
  await Promise.all([primary, fallback].map((u) => u?.close()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const u of [primary, fallback]) {
    u.faults.clear();
    u.requests.length = 0;
    u.config.chunkIntervalMs = 0;
    u.config.repeatWords = 0;
  }
  // A scenario that opened a circuit leaves it to its trial calls, which close it on the healed upstream.
  const { health } = platform.services.inference.gateway;
  await vi.waitFor(() => expect(SCENARIOS.filter((s) => health.circuit(`p-${s}`) !== 'closed')).toEqual([]), { timeout: 3_000, interval: 20 });
});

const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me about the fox.' }];

/** What a scenario sees: the answer, who gave it (model and provider), and the route header. */
interface Seen {
  text: string;
  model: string;
  provider: string;
  route: string[];
  finish: string | null;
}

const routeLine = (route: RouteAttempt[] | undefined) => (route ?? []).map((a) => `${a.deployment} ${a.outcome}`);

async function ask(model: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}): Promise<Seen> {
  const { data, response } = await client.chat.completions.create({ model, messages: question, ...extra }).withResponse();
  const body = data as OpenAI.ChatCompletion & { provider: string };
  return { text: body.choices[0]!.message.content ?? '', model: body.model, provider: body.provider, route: routeLine(routeOf(response.headers)), finish: body.choices[0]!.finish_reason };
}

/** A streamed answer: its text, and the model and provider its finish chunk names. */
async function askStream(model: string): Promise<Seen> {
  const { data: stream, response } = await client.chat.completions.create({ model, messages: question, stream: true }).withResponse();
  let text = '';
  let finished: (OpenAI.ChatCompletionChunk & { provider?: string }) | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.choices[0]?.finish_reason) finished = chunk;
  }
  return { text, model: finished!.model, provider: finished!.provider!, route: routeLine(routeOf(response.headers)), finish: finished!.choices[0]!.finish_reason };
}

/** The error a request ended with (fails the test when it answered). */
async function refusal(call: () => Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

const rescuedBy = (name: string): Partial<Seen> => ({ text: ANSWER, model: `f-${name}`, provider: 'fallback' });
const servedBy = (name: string): Partial<Seen> => ({ text: ANSWER, model: `p-${name}`, provider: 'primary' });

describe('before the first byte', () => {
  it('1. 429 with Retry-After: waited out (up to the cap), the primary answers', async () => {
    primary.faults.push({ type: 'rate_limit', retryAfter: '1' });
    const started = Date.now();
    const seen = await ask('p-ra');
    expect(seen).toMatchObject(servedBy('ra'));
    expect(seen.route).toEqual(['p-ra rate_limit', 'p-ra ok']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it.each([
    ['2. 429 without Retry-After: the fallback model answers at once, and says so', 'rl', { type: 'rate_limit' }, rescuedBy, ['p-rl rate_limit', 'f-rl ok']],
    ['3. 500 once: the same deployment, retried once, answers', 'once', { type: 'server_error' }, servedBy, ['p-once server', 'p-once ok']],
    ['5. a reset before headers: retried once on the same deployment', 'reset', { type: 'reset' }, servedBy, ['p-reset unavailable', 'p-reset ok']],
    ['6. no answer at all: the fallback answers after first_token_ms, no retry of the silent one', 'hang', { type: 'hang' }, rescuedBy, ['p-hang timeout', 'f-hang ok']],
  ] as [string, string, Fault, (name: string) => Partial<Seen>, string[]][])('%s', async (_title, name, fault, answered, route) => {
    primary.faults.push(fault);
    const seen = await ask(`p-${name}`);
    expect(seen).toMatchObject(answered(name));
    expect(seen.route).toEqual(route);
  });

  it('4. 503 for good: the fallback answers (plain, stream, Responses API), named as the answer; the open primary is then skipped', async () => {
    primary.faults.always({ type: 'unavailable' });
    const first = await ask('p-down');
    expect(first).toMatchObject(rescuedBy('down'));
    expect(first.route).toEqual(['p-down unavailable', 'p-down unavailable', 'f-down ok']);
    // The third failure in a row opens the primary's circuit: no retry on it, then no call at all.
    expect((await ask('p-down')).route).toEqual(['p-down unavailable', 'f-down ok']);
    expect(await askStream('p-down')).toMatchObject({ ...rescuedBy('down'), route: ['f-down ok'], finish: 'stop' });
    const { data, response } = await client.responses.create({ model: 'p-down', input: 'Tell me about the fox.' }).withResponse();
    expect(data).toMatchObject({ model: 'f-down', provider: 'fallback', output_text: ANSWER });
    expect(routeLine(routeOf(response.headers))).toEqual(['f-down ok']);
    const streamed = await client.responses.create({ model: 'p-down', input: 'Tell me about the fox.', stream: true }).withResponse();
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of streamed.data) if (event.type === 'response.completed') completed = event.response;
    expect(completed).toMatchObject({ model: 'f-down', provider: 'fallback', output_text: ANSWER });
    expect(routeLine(routeOf(streamed.response.headers))).toEqual(['f-down ok']);
  });

  it('7. a slow first token on a stream: the fallback streams the whole answer', async () => {
    primary.faults.push({ type: 'slow_first_token', ms: 2_000 });
    const seen = await askStream('p-slow');
    expect(seen).toMatchObject({ ...rescuedBy('slow'), finish: 'stop' });
    expect(seen.route).toEqual(['p-slow timeout', 'f-slow ok']);
  });
});

describe('after the first byte: the stream is resumed on the fallback model', () => {
  it.each([
    ['8. a stream cut', 'cut', { type: 'cut', afterChunks: 4 }],
    ['9. a stall', 'stall', { type: 'stall', afterChunks: 4 }],
    ['10. a malformed chunk', 'malformed', { type: 'malformed', afterChunks: 4 }],
    ['11. no [DONE]', 'nodone', { type: 'no_done' }],
  ] as [string, string, Fault][])('%s: one whole answer, finished by the fallback, which its last chunk names', async (_name, name, fault) => {
    primary.config.chunkIntervalMs = 5;
    primary.faults.push(fault);
    const seen = await askStream(`p-${name}`);
    expect(seen).toMatchObject({ ...rescuedBy(name), finish: 'stop' });
    // The header left with the first event: the primary was answering then.
    expect(seen.route).toEqual([`p-${name} ok`]);
    const resumed = fallback.requests[0].body;
    expect([resumed.continue_final_message, resumed.messages.at(-1).role]).toEqual([true, 'assistant']);
    expect(ANSWER.startsWith(resumed.messages.at(-1).content)).toBe(true);
  });
});

describe('refusals', () => {
  it("12. context length: the upstream's own refusal goes to the context-window fallback; a prompt known too long goes there before any call", async () => {
    primary.faults.push({ type: 'context_length' });
    const seen = await ask('p-ctx');
    expect(seen).toMatchObject(rescuedBy('ctx'));
    expect(seen.route).toEqual(['p-ctx context_length', 'f-ctx ok']);
    primary.requests.length = 0;
    const long = await ask('p-ctx', { messages: [{ role: 'user', content: 'fox '.repeat(3_000) }] });
    expect([long.model, long.route, primary.requests.length]).toEqual(['f-ctx', ['f-ctx ok'], 0]);
  });

  it('13. content filter: the content-policy fallback, where the model opts in; else a clean 422 naming the filter', async () => {
    primary.faults.push({ type: 'content_filter' });
    const seen = await ask('p-cf');
    expect(seen).toMatchObject(rescuedBy('cf'));
    expect(seen.route).toEqual(['p-cf content_filter', 'f-cf ok']);
    // A model with general fallbacks only: another model is not asked to pass what a filter refused.
    primary.faults.push({ type: 'content_filter' });
    const error = await refusal(() => ask('p-strict'));
    expect(error.status).toBe(422);
    expect(error.error).toMatchObject({ name: 'CONTENT_FILTERED', code: 1018, retryable: false });
    expect(fallback.requests).toHaveLength(1);
  });

  it('14. a fallback that refuses an assistant prefix: asked again in a user turn, its repeat trimmed, one whole answer', async () => {
    primary.config.chunkIntervalMs = 5;
    primary.faults.push({ type: 'cut', afterChunks: 5 });
    fallback.faults.push({ type: 'refuse_prefix' });
    fallback.config.repeatWords = 2;
    const seen = await askStream('p-refuse');
    expect(seen).toMatchObject({ ...rescuedBy('refuse'), finish: 'stop' });
    const [prefixed, asked] = fallback.requests.map((r) => r.body);
    expect(prefixed.messages.at(-1).role).toBe('assistant');
    expect(asked.messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining(prefixed.messages.at(-1).content) });
  });

  it('14b. when nothing can continue the stream, its error names the cut, not the fallback\'s 400', async () => {
    primary.config.chunkIntervalMs = 5;
    primary.faults.push({ type: 'cut', afterChunks: 5 });
    fallback.faults.push({ type: 'refuse_prefix' }, { type: 'bad_request' });
    const error = await refusal(() => askStream('p-refuse'));
    expect(error.error).toMatchObject({ name: 'CONNECTION_DROPPED', code: 2009 });
    expect(fallback.requests).toHaveLength(2);
  });
});

describe('circuits', () => {
  it('15. a flapping primary: its circuit opens, traffic goes to the fallback, and comes back within 10 s of the primary healing', async () => {
    // Down, up, down, up, …: never three failures in a row, but half of the calls.
    primary.faults.push(...Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? ({ type: 'unavailable' } as const) : ({ type: 'slow_first_token', ms: 0 } as const))));
    const { health } = platform.services.inference.gateway;
    for (let i = 0; i < 6 && health.circuit('p-flap') === 'closed'; i++) expect((await ask('p-flap')).text).toBe(ANSWER);
    expect(health.circuit('p-flap')).not.toBe('closed');
    // Down for good now: every answer comes from the fallback, without a call to the primary.
    primary.faults.clear();
    primary.faults.always({ type: 'unavailable' });
    const outage = Date.now();
    expect(await ask('p-flap')).toMatchObject({ ...rescuedBy('flap'), route: ['f-flap ok'] });
    const state = await deploymentState('p-flap');
    expect(state).toMatchObject({ provider: 'primary', upstreamModel: 'primary-flap', models: ['p-flap'], lastError: expect.stringContaining('503') });
    expect(['open', 'half_open']).toContain(state.state);
    expect(state.nextTrialAt).toBeGreaterThanOrEqual(outage);
    expect(state.nextTrialAt).toBeLessThanOrEqual(Date.now() + 400);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Trial calls meanwhile: one-token requests, at most one per half of trial_ms, backing off.
    const trials = primary.requests.filter((r) => r.body?.max_tokens === 1).length;
    expect(trials).toBeGreaterThanOrEqual(2);
    expect(trials).toBeLessThanOrEqual(1_000 / 50);
    primary.faults.clear();
    const healed = Date.now();
    let back = 0;
    while (!back) {
      if ((await ask('p-flap')).model === 'p-flap') back = Date.now() - healed;
      else await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(back).toBeLessThan(10_000);
    expect(await deploymentState('p-flap')).toMatchObject({ state: 'closed', nextTrialAt: null, failures: 0 });
  });

  it('16. fail-over accounting: the answer is billed once, at the fallback model\'s prices; the failed attempts cost the caller nothing', async () => {
    const onFallback = await meter(platform, { model: 'f-acct' });
    const onPrimary = await meter(platform, { model: 'p-acct' });
    primary.faults.push({ type: 'unavailable' }, { type: 'unavailable' });
    const { data, response } = await client.chat.completions.create({ model: 'p-acct', messages: question }).withResponse();
    expect(routeLine(routeOf(response.headers))).toEqual(['p-acct unavailable', 'p-acct unavailable', 'f-acct ok']);
    expect(data.model).toBe('f-acct');
    const usage = data.usage!;
    const billed = await onFallback.added(1);
    const price = BigInt(usage.prompt_tokens * FALLBACK_PRICE.input_per_1m + usage.completion_tokens * FALLBACK_PRICE.output_per_1m);
    expect(billed).toMatchObject({ inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens, costMicros: price, billedMicros: price });
    expect(await onPrimary.added(0)).toMatchObject({ calls: 0, costMicros: 0n });
  });
});

describe('the management read of deployments', () => {
  it('needs metrics:read', async () => {
    const { identity } = platform.services;
    const org = await identity.organizations.findOrganization('default');
    const key = (await identity.keys.issue(org!.id, { scopes: ['inference'] })).plaintext;
    const res = await platform.mgmt('/api/v1/gateway/deployments', { key });
    expect(res.status).toBe(403);
    expect((await res.json()).trace_id).toMatch(/^trc_/);
  });
});

async function deploymentState(id: string) {
  const res = await platform.mgmt('/api/v1/gateway/deployments');
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(body.data).toHaveLength(SCENARIOS.length * 2);
  return body.data.find((d: { id: string }) => d.id === id);
}
