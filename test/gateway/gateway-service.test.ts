// The gateway's failover, Retry-After, circuit and stream-resume rules, against scripted
// in-process providers (the HTTP adapters and their faults are tested in test/providers,
// and end to end over HTTP in test/gateway/faults.test.ts and stream-faults.test.ts).
import { getEventListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../server/errors.js';
import { buildCatalog, type Catalog } from '../../server/gateway/catalog.js';
import { ChatCompletions } from '../../server/gateway/chat-completions.js';
import { GatewayService } from '../../server/gateway/gateway-service.js';
import { Guardrails, type GuardrailCheck } from '../../server/gateway/guardrails.js';
import { DeploymentHealth } from '../../server/gateway/health.js';
import { planRoute } from '../../server/gateway/routing.js';
import { UsageScope, type UsageMeter } from '../../server/gateway/usage-scope.js';
import { ProviderError, type CallContext, type ChatRequest, type ChatStreamEvent, type Provider } from '../../server/providers/types.js';

type Step =
  | { text: string }
  | { error: ProviderError }
  | { stream: (ChatStreamEvent | ProviderError)[] };

/** A provider that answers each call with the next step of its script and records the requests. */
function scripted(id: string, steps: Step[]): Provider & { requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  const nextStep = (request: ChatRequest) => {
    requests.push(request);
    const step = steps.shift();
    if (!step) throw new Error(`${id}: no step left`);
    return step;
  };
  return {
    id,
    kind: 'openai',
    requests,
    async chat(request) {
      const step = nextStep(request);
      if ('error' in step) throw step.error;
      if (!('text' in step)) throw new Error('not a chat step');
      return { content: step.text, finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 2 } };
    },
    async *chatStream(request) {
      const step = nextStep(request);
      if ('error' in step) throw step.error;
      if (!('stream' in step)) throw new Error('not a stream step');
      for (const event of step.stream) {
        if (event instanceof ProviderError) throw event;
        yield event;
      }
    },
    async embed() {
      throw new ProviderError('unavailable', 'down');
    },
    async probe() {},
    async close() {},
  };
}

/** A provider whose stream runs `events`, and whether that stream has ended (finished, returned or thrown out of). */
function watchedStream(id: string, events: (ctx: CallContext) => AsyncGenerator<ChatStreamEvent>) {
  const watch = { ended: false, provider: undefined as unknown as Provider };
  watch.provider = {
    ...scripted(id, []),
    async *chatStream(_request, ctx) {
      try {
        yield* events(ctx);
      } finally {
        watch.ended = true;
      }
    },
  };
  return watch;
}

const delta = (content: string): ChatStreamEvent => ({ type: 'delta', content });
const finish: ChatStreamEvent = { type: 'finish', finishReason: 'stop', usage: { promptTokens: 5, completionTokens: 4 } };

function catalogOf(deployments: string[], extra: Record<string, unknown> = {}): Catalog {
  return buildCatalog(
    {
      // Scripted upstreams continue whatever prefix they are given.
      providers: deployments.map((id) => ({ id, type: 'openai', base_url: 'http://127.0.0.1:9/v1', prefix: 'native' })),
      // Tried in the order given.
      deployments: deployments.map((id, i) => ({ id, provider: id, model: `upstream-${id}`, order: i + 1 })),
      models: [{ id: 'm', family: 'openai', context_window: 1000, max_output_tokens: 100, capabilities: { tools: true }, deployments }],
      routing: { tiers: { tier_1: ['m'], tier_2: ['m'], tier_3: ['m'] } },
      ...extra,
    },
    'test',
    {},
  );
}

function gatewayOf(providers: Provider[], extra: Record<string, unknown> = {}) {
  const catalog = catalogOf(
    providers.map((p) => p.id),
    extra,
  );
  const health = new DeploymentHealth(catalog);
  return { gateway: new GatewayService(catalog, new Map(providers.map((p) => [p.id, p])), health), health, catalog };
}

const features = { promptTokens: 10, maxTokens: undefined, hasTools: false, hasImages: false, jsonSchema: false, messageCount: 1, userText: 'hi' };
const log = pino({ level: 'silent' });

function callOf(catalog: Catalog, signal = new AbortController().signal, meter: UsageMeter | null = null) {
  return { plan: planRoute(catalog, { model: 'm' }, features), request: { messages: [{ role: 'user' as const, content: 'hi' }] }, signal, meter, log };
}

async function collect(stream: AsyncIterable<ChatStreamEvent>): Promise<string> {
  let text = '';
  for await (const event of stream) if (event.type === 'delta') text += event.content ?? '';
  return text;
}

describe('gateway failover before the first byte', () => {
  it('fails over from a 5xx to the next deployment and reports who answered', async () => {
    const a = scripted('a', [{ error: new ProviderError('server', '500', { status: 500 }) }]);
    const b = scripted('b', [{ text: 'from b' }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const outcome = await gateway.chat(callOf(catalog));
    expect(outcome.result.content).toBe('from b');
    expect(outcome.served.deployment.id).toBe('b');
    expect(outcome.attempts.map((x) => [x.deploymentId, x.outcome])).toEqual([
      ['a', 'server'],
      ['b', 'ok'],
    ]);
    expect(b.requests[0].model).toBe('upstream-b');
  });

  it.each([
    ['bad_request', 'PROVIDER_BAD_REQUEST', 400],
    ['context_length', 'CONTEXT_WINDOW_EXCEEDED', 400],
    ['content_filter', 'CONTENT_FILTERED', 422],
    ['auth', 'PROVIDER_AUTH_ERROR', 500],
  ] as const)('never retries %s elsewhere (%s)', async (kind, name, status) => {
    const a = scripted('a', [{ error: new ProviderError(kind, kind) }]);
    const b = scripted('b', [{ text: 'unused' }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const error = (await gateway.chat(callOf(catalog)).catch((e) => e)) as ApiError;
    expect(error).toBeInstanceOf(ApiError);
    expect([error.errorName, error.status]).toEqual([name, status]);
    expect(b.requests).toHaveLength(0);
  });

  it('waits out a short upstream Retry-After when no peer is left, then retries', async () => {
    const a = scripted('a', [{ error: new ProviderError('rate_limit', '429', { status: 429, retryAfterMs: 60 }) }, { text: 'after the pause' }]);
    const { gateway, catalog } = gatewayOf([a]);
    const started = Date.now();
    const outcome = await gateway.chat(callOf(catalog));
    expect(outcome.result.content).toBe('after the pause');
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    expect(a.requests).toHaveLength(2);
  });

  it('answers 429 RATE_LIMIT with Retry-After when the upstream asks for longer than the cap', async () => {
    const a = scripted('a', [{ error: new ProviderError('rate_limit', '429', { status: 429, retryAfterMs: 30_000 }) }]);
    const { gateway, catalog } = gatewayOf([a]);
    const error = (await gateway.chat(callOf(catalog)).catch((e) => e)) as ApiError;
    expect([error.errorName, error.status, error.options.headers]).toEqual(['RATE_LIMIT', 429, { 'Retry-After': '30' }]);
    expect(a.requests).toHaveLength(1);
  });

  it('opens the circuit after consecutive failures, skips the deployment, then tries it half-open after the cooldown', async () => {
    const failing = Array.from({ length: 3 }, () => ({ error: new ProviderError('unavailable', 'refused') }));
    const a = scripted('a', [...failing, { text: 'recovered' }]);
    const b = scripted('b', [{ text: 'b1' }, { text: 'b2' }, { text: 'b3' }, { text: 'b4' }]);
    let now = 1_000_000;
    const catalog = catalogOf(['a', 'b'], { circuit: { failure_threshold: 3, cooldown_ms: 5_000 } });
    const health = new DeploymentHealth(catalog, () => now);
    const gateway = new GatewayService(catalog, new Map([a, b].map((p) => [p.id, p])), health);
    for (let i = 0; i < 3; i++) expect((await gateway.chat(callOf(catalog))).served.deployment.id).toBe('b');
    expect(health.circuit('a')).toBe('open');
    expect((await gateway.chat(callOf(catalog))).served.deployment.id).toBe('b');
    expect(a.requests).toHaveLength(3);
    now += 5_001;
    expect(health.circuit('a')).toBe('half_open');
    const outcome = await gateway.chat(callOf(catalog));
    expect(outcome.result.content).toBe('recovered');
    expect(health.circuit('a')).toBe('closed');
  });

  it('answers 503 PROVIDER_UNAVAILABLE when every deployment is down, the last one tried once more', async () => {
    const a = scripted('a', [{ error: new ProviderError('unavailable', 'refused') }]);
    const b = scripted('b', [{ error: new ProviderError('unavailable', 'refused') }, { error: new ProviderError('unavailable', 'refused') }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const error = (await gateway.chat(callOf(catalog)).catch((e) => e)) as ApiError;
    expect([error.errorName, error.status]).toEqual(['PROVIDER_UNAVAILABLE', 503]);
    expect([a.requests.length, b.requests.length]).toEqual([1, 2]);
  });

  it('spreads sequential model_family traffic by weight, and prefers the least loaded', async () => {
    const always = (id: string): Provider => ({
      ...scripted(id, []),
      async chat() {
        return { content: id, finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } };
      },
    });
    const catalog = buildCatalog(
      {
        providers: [
          { id: 'heavy', type: 'openai', base_url: 'http://127.0.0.1:9/v1' },
          { id: 'light', type: 'openai', base_url: 'http://127.0.0.1:9/v1' },
        ],
        deployments: [
          { id: 'heavy', provider: 'heavy', model: 'x', weight: 3 },
          { id: 'light', provider: 'light', model: 'x', weight: 1 },
        ],
        models: [
          { id: 'm1', family: 'openai', context_window: 1000, max_output_tokens: 100, deployments: ['heavy'] },
          { id: 'm2', family: 'openai', context_window: 1000, max_output_tokens: 100, deployments: ['light'] },
        ],
        routing: { tiers: { tier_1: ['m1'], tier_2: ['m1'], tier_3: ['m1'] } },
      },
      'test',
      {},
    );
    const health = new DeploymentHealth(catalog);
    const gateway = new GatewayService(catalog, new Map([always('heavy'), always('light')].map((p) => [p.id, p])), health);
    const call = { plan: planRoute(catalog, { model_family: 'openai' }, features), request: { messages: [{ role: 'user' as const, content: 'hi' }] }, signal: new AbortController().signal, meter: null, log };
    const served = { heavy: 0, light: 0 };
    for (let i = 0; i < 1_000; i++) served[(await gateway.chat(call)).served.deployment.id as 'heavy' | 'light']++;
    // 3 : 1 by weight; the binomial spread is ±14, the bounds ±5 of it.
    expect(served.light).toBeGreaterThan(180);
    expect(served.light).toBeLessThan(320);
    // Three calls in flight on the heavy one (one per unit of weight): the light one is now the least loaded.
    const ends = [health.begin('heavy'), health.begin('heavy'), health.begin('heavy')];
    for (let i = 0; i < 20; i++) expect((await gateway.chat(call)).served.deployment.id).toBe('light');
    for (const end of ends) end({ ok: true, latencyMs: 1 });
  });
});

/**
 * Model `m` on the `primary` providers' deployments (tried in order), with `f` on the
 * `fallback` ones; `m` takes `model` (its fallback lists, its own retry policy).
 * `userTurn`: deployments that cannot continue a prefix (prefix none).
 */
function fallbackGateway(primary: Provider[], fallback: Provider[], options: { model?: Record<string, unknown>; extra?: Record<string, unknown>; userTurn?: string[] } = {}) {
  const ids = [...primary, ...fallback].map((p) => p.id);
  const catalog = buildCatalog(
    {
      providers: ids.map((id) => ({ id, type: 'openai', base_url: 'http://127.0.0.1:9/v1', prefix: options.userTurn?.includes(id) ? 'none' : 'native' })),
      deployments: ids.map((id, i) => ({ id, provider: id, model: `upstream-${id}`, order: i + 1 })),
      models: [
        { id: 'm', family: 'openai', context_window: 1000, max_output_tokens: 100, deployments: primary.map((p) => p.id), ...(options.model ?? { fallbacks: ['f'] }) },
        { id: 'f', family: 'anthropic', context_window: 100_000, max_output_tokens: 100, deployments: fallback.map((p) => p.id) },
      ],
      routing: { tiers: { tier_1: ['m'], tier_2: ['m'], tier_3: ['m'] } },
      ...options.extra,
    },
    'test',
    {},
  );
  const health = new DeploymentHealth(catalog);
  return { gateway: new GatewayService(catalog, new Map([...primary, ...fallback].map((p) => [p.id, p])), health), catalog, health };
}

const tried = (attempts: { modelId: string; deploymentId: string; outcome: string }[]) => attempts.map((a) => `${a.modelId}/${a.deploymentId} ${a.outcome}`);
const fail = (kind: ProviderError['kind'], details: ProviderError['details'] = {}) => ({ error: new ProviderError(kind, kind, details) });

describe('model fallbacks and the retry policy', () => {
  it('retries the same deployment once after a 5xx before leaving the model', async () => {
    const a = scripted('a', [fail('server', { status: 500 }), { text: 'a again' }]);
    const f = scripted('f', [{ text: 'unused' }]);
    const { gateway, catalog } = fallbackGateway([a], [f]);
    const outcome = await gateway.chat(callOf(catalog));
    expect([outcome.result.content, outcome.served.model.id]).toEqual(['a again', 'm']);
    expect(tried(outcome.attempts)).toEqual(['m/a server', 'm/a ok']);
    expect(f.requests).toHaveLength(0);
  });

  it('then goes to the fallback model, which the answer names (503 for good)', async () => {
    const a = scripted('a', [fail('unavailable', { status: 503 }), fail('unavailable', { status: 503 })]);
    const f = scripted('f', [{ text: 'from f' }]);
    const { gateway, catalog } = fallbackGateway([a], [f]);
    const outcome = await gateway.chat(callOf(catalog));
    expect([outcome.result.content, outcome.served.model.id, outcome.served.deployment.id]).toEqual(['from f', 'f', 'f']);
    expect(tried(outcome.attempts)).toEqual(['m/a unavailable', 'm/a unavailable', 'f/f ok']);
    expect(f.requests[0].model).toBe('upstream-f');
  });

  it("moves on at once among one model's deployments, and retries only the last before leaving it", async () => {
    const a = scripted('a', [fail('server')]);
    const b = scripted('b', [fail('unavailable'), fail('unavailable')]);
    const f = scripted('f', [{ text: 'from f' }]);
    const { gateway, catalog } = fallbackGateway([a, b], [f], { extra: { failover: { max_attempts: 4 } } });
    expect(tried((await gateway.chat(callOf(catalog))).attempts)).toEqual(['m/a server', 'm/b unavailable', 'm/b unavailable', 'f/f ok']);
  });

  it('gives the last attempt max_attempts allows to the fallback model, not to a retry', async () => {
    const a = scripted('a', [fail('server')]);
    const b = scripted('b', [fail('unavailable')]);
    const f = scripted('f', [{ text: 'from f' }]);
    const { gateway, catalog } = fallbackGateway([a, b], [f], { extra: { failover: { max_attempts: 3 } } });
    expect(tried((await gateway.chat(callOf(catalog))).attempts)).toEqual(['m/a server', 'm/b unavailable', 'f/f ok']);
  });

  it('does not retry a timeout, nor a 429 without Retry-After: the fallback at once', async () => {
    for (const error of [fail('timeout', { timeout: 'first_token' }), fail('rate_limit', { status: 429 })]) {
      const a = scripted('a', [error]);
      const f = scripted('f', [{ text: 'from f' }]);
      const { gateway, catalog } = fallbackGateway([a], [f]);
      expect((await gateway.chat(callOf(catalog))).served.model.id).toBe('f');
    }
  });

  it('waits out a short Retry-After on the same deployment before leaving the model', async () => {
    const a = scripted('a', [fail('rate_limit', { status: 429, retryAfterMs: 60 }), { text: 'after the pause' }]);
    const f = scripted('f', [{ text: 'unused' }]);
    const { gateway, catalog } = fallbackGateway([a], [f]);
    const started = Date.now();
    const outcome = await gateway.chat(callOf(catalog));
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    expect([outcome.result.content, f.requests.length]).toEqual(['after the pause', 0]);
  });

  it('takes the retry policy of the route over the model, and of the model over the gateway', async () => {
    const run = async (options: Parameters<typeof fallbackGateway>[2], operation?: string) => {
      const a = scripted('a', [fail('server'), { text: 'a again' }]);
      const f = scripted('f', [{ text: 'from f' }]);
      const { gateway, catalog } = fallbackGateway([a], [f], options);
      return (await gateway.chat({ ...callOf(catalog), operation })).served.model.id;
    };
    expect(await run({ model: { fallbacks: ['f'], failover: { retries: 0 } } })).toBe('f');
    expect(await run({ extra: { failover: { retries: 0 } } })).toBe('f');
    expect(await run({ model: { fallbacks: ['f'], failover: { retries: 0 } }, extra: { failover: { routes: { op: { retries: 1 } } } } }, 'op')).toBe('m');
    expect(await run({ extra: { failover: { routes: { op: { retries: 0 } } } } }, 'op')).toBe('f');
    expect(await run({ extra: { failover: { routes: { op: { retries: 0 } } } } }, 'other')).toBe('m');
  });

  it("a context-length refusal goes to the model's context-window fallbacks (not its general ones)", async () => {
    const a = scripted('a', [fail('context_length', { status: 400 })]);
    const f = scripted('f', [{ text: 'a larger window' }]);
    const { gateway, catalog } = fallbackGateway([a], [f], { model: { context_window_fallbacks: ['f'] } });
    const outcome = await gateway.chat(callOf(catalog));
    expect([outcome.served.model.id, ...tried(outcome.attempts)]).toEqual(['f', 'm/a context_length', 'f/f ok']);
    // Only a context-window fallback takes it.
    const b = scripted('a', [fail('context_length', { status: 400 })]);
    const other = fallbackGateway([b], [scripted('f', [])]);
    expect(((await other.gateway.chat(callOf(other.catalog)).catch((e) => e)) as ApiError).errorName).toBe('CONTEXT_WINDOW_EXCEEDED');
  });

  it('a content-filter refusal goes to the content-policy fallbacks only when the model opts in', async () => {
    const a = scripted('a', [fail('content_filter', { status: 400 })]);
    const f = scripted('f', [{ text: 'accepted here' }]);
    const { gateway, catalog } = fallbackGateway([a], [f], { model: { content_policy_fallbacks: ['f'] } });
    expect((await gateway.chat(callOf(catalog))).served.model.id).toBe('f');
    const b = scripted('a', [fail('content_filter', { status: 400 })]);
    const other = fallbackGateway([b], [scripted('f', [])]);
    expect(((await other.gateway.chat(callOf(other.catalog)).catch((e) => e)) as ApiError).errorName).toBe('CONTENT_FILTERED');
  });

  it('resumes a stream cut on the primary model on its fallback model, named on the stream', async () => {
    const a = scripted('a', [{ stream: [delta('The quick'), fail('connection_dropped').error] }]);
    const f = scripted('f', [{ stream: [delta(' brown fox.'), finish] }]);
    const { gateway, catalog } = fallbackGateway([a], [f]);
    const stream = await gateway.chatStream(callOf(catalog));
    expect(stream.served.model.id).toBe('m');
    expect(await collect(stream)).toBe('The quick brown fox.');
    expect([stream.served.model.id, ...tried(stream.attempts)]).toEqual(['f', 'm/a connection_dropped', 'f/f ok']);
  });
});

describe('continuation without a prefix', () => {
  const cut = () => ({ stream: [delta('The quick'), delta(' brown'), fail('connection_dropped').error] });

  it('asks an upstream that cannot continue a prefix (prefix none) in a user turn, and trims what it repeats', async () => {
    const a = scripted('a', [cut()]);
    const f = scripted('f', [{ stream: [delta('brown f'), delta('ox jumps.'), finish] }]);
    const { gateway, catalog } = fallbackGateway([a], [f], { userTurn: ['f'] });
    const stream = await gateway.chatStream(callOf(catalog));
    expect(await collect(stream)).toBe('The quick brown fox jumps.');
    const asked = f.requests[0];
    expect(asked.assistantPrefix).toBeUndefined();
    expect(asked.messages.map((m) => m.role)).toEqual(['user', 'user']);
    expect(asked.messages[1].content).toContain('<<<\nThe quick brown\n>>>');
  });

  it('asks in a user turn at once on the deployment that refused the prefix with a 400', async () => {
    const a = scripted('a', [cut()]);
    const f = scripted('f', [fail('prefix_refused', { status: 400 }), { stream: [delta('The quick brown fox.'), finish] }]);
    const { gateway, catalog } = fallbackGateway([a], [f]);
    const stream = await gateway.chatStream(callOf(catalog));
    // All of it repeated: all of it trimmed.
    expect(await collect(stream)).toBe('The quick brown fox.');
    expect(f.requests[0].assistantPrefix).toEqual({ text: 'The quick brown', mode: 'native' });
    expect(f.requests[1].assistantPrefix).toBeUndefined();
    expect(tried(stream.attempts)).toEqual(['m/a connection_dropped', 'f/f prefix_refused', 'f/f ok']);
  });

  it('ends with the original failure (the cut), not the fallback\'s refusal, when none can continue', async () => {
    const a = scripted('a', [cut()]);
    const f = scripted('f', [fail('prefix_refused', { status: 400 }), fail('bad_request', { status: 400 })]);
    const { gateway, catalog } = fallbackGateway([a], [f]);
    const stream = await gateway.chatStream(callOf(catalog));
    const error = (await collect(stream).catch((e) => e)) as ApiError;
    expect([error.errorName, error.status]).toEqual(['CONNECTION_DROPPED', 500]);
    expect(f.requests).toHaveLength(2);
  });
});

describe('gateway streams', () => {
  it('fails over when a stream breaks before its first event', async () => {
    const a = scripted('a', [{ stream: [new ProviderError('timeout', 'slow first token', { timeout: 'first_token' })] }]);
    const b = scripted('b', [{ stream: [delta('Hello'), delta(' world'), finish] }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const stream = await gateway.chatStream(callOf(catalog));
    expect(stream.served.deployment.id).toBe('b');
    expect(await collect(stream)).toBe('Hello world');
  });

  it('resumes a stream cut after it started on another deployment, with the partial answer as prefix', async () => {
    const a = scripted('a', [{ stream: [delta('The quick'), delta(' brown'), new ProviderError('connection_dropped', 'cut')] }]);
    const b = scripted('b', [{ stream: [delta(' fox jumps'), delta(' over.'), finish] }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const signal = new AbortController().signal;
    const stream = await gateway.chatStream(callOf(catalog, signal));
    expect(await collect(stream)).toBe('The quick brown fox jumps over.');
    expect(b.requests[0].assistantPrefix).toEqual({ text: 'The quick brown', mode: 'native' });
    expect(stream.served.deployment.id).toBe('b');
    expect(stream.attempts.map((x) => x.outcome)).toEqual(['connection_dropped', 'ok']);
    // Both attempts stopped following the request's signal once over.
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('skips a fallback that starts the answer over, whether given the prefix or asked in a user turn', async () => {
    const a = scripted('a', [{ stream: [delta('The quick brown fox'), new ProviderError('malformed_stream', 'bad chunk')] }]);
    const b = scripted('b', [{ stream: [delta('The quick brown dog'), finish] }, { stream: [delta('The quick brown dog'), finish] }]);
    const c = scripted('c', [{ stream: [delta(' jumps over.'), finish] }]);
    const { gateway, catalog } = gatewayOf([a, b, c], { failover: { max_attempts: 4 } });
    const stream = await gateway.chatStream(callOf(catalog));
    expect(await collect(stream)).toBe('The quick brown fox jumps over.');
    expect(stream.attempts.map((x) => [x.deploymentId, x.outcome])).toEqual([
      ['a', 'malformed_stream'],
      ['b', 'prefix_refused'],
      ['b', 'prefix_refused'],
      ['c', 'ok'],
    ]);
    // Refusing the prefix, b was asked again at once in a user turn quoting the partial answer.
    expect(b.requests[1].assistantPrefix).toBeUndefined();
    expect(b.requests[1].messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('<<<\nThe quick brown fox\n>>>') });
  });

  it('ends with the error when no deployment can continue', async () => {
    const a = scripted('a', [{ stream: [delta('partial'), new ProviderError('timeout', 'stalled', { timeout: 'idle' })] }]);
    const { gateway, catalog } = gatewayOf([a]);
    const stream = await gateway.chatStream(callOf(catalog));
    const seen: string[] = [];
    const error = await (async () => {
      for await (const event of stream) if (event.type === 'delta') seen.push(event.content ?? '');
    })().catch((e) => e);
    expect(seen).toEqual(['partial']);
    expect([(error as ApiError).errorName, (error as ApiError).status]).toEqual(['PROVIDER_TIMEOUT', 408]);
  });

  it('does not resume once tool-call deltas were sent', async () => {
    const a = scripted('a', [
      { stream: [{ type: 'delta', toolCalls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a"' } }] }, new ProviderError('connection_dropped', 'cut')] },
    ]);
    const b = scripted('b', [{ stream: [delta('unused'), finish] }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const stream = await gateway.chatStream(callOf(catalog));
    const error = await collect(stream).catch((e) => e);
    expect((error as ApiError).errorName).toBe('CONNECTION_DROPPED');
    expect(b.requests).toHaveLength(0);
  });

  it('never presents a stream that ends without finishing as a normal end', async () => {
    const a = scripted('a', [{ stream: [delta('half an answer')] }]);
    const { gateway, catalog } = gatewayOf([a], { failover: { resume_streams: false } });
    const stream = await gateway.chatStream(callOf(catalog));
    const error = await collect(stream).catch((e) => e);
    expect((error as ApiError).errorName).toBe('CONNECTION_DROPPED');
  });

  it('sends embeddings to one provider only: a down provider is 503 with no failover', async () => {
    const catalog = buildCatalog(
      {
        providers: [{ id: 'a', type: 'openai', base_url: 'http://127.0.0.1:9/v1' }],
        deployments: [{ id: 'a', provider: 'a', model: 'e' }],
        models: [{ id: 'emb', family: 'openai', type: 'embedding', context_window: 100, dimensions: 8, deployments: ['a'] }],
      },
      'test',
      {},
    );
    const provider = scripted('a', []);
    const gateway = new GatewayService(catalog, new Map([['a', provider]]), new DeploymentHealth(catalog));
    const error = (await gateway.embed('emb', ['x'], undefined, { signal: new AbortController().signal, meter: null }).catch((e) => e)) as ApiError;
    expect([error.errorName, error.status]).toEqual(['EMBEDDING_PROVIDER_UNAVAILABLE', 503]);
  });
});

describe('deployment health', () => {
  it('judges a stream by its first event: a long healthy stream is not a slow answer', async () => {
    const streaming: Provider = {
      ...scripted('a', []),
      async *chatStream() {
        yield delta('at once');
        await sleep(120);
        yield finish;
      },
      async chat() {
        await sleep(120);
        return { content: 'slow', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } };
      },
    };
    const { gateway, catalog, health } = gatewayOf([streaming], { circuit: { failure_threshold: 1, slow_ms: 60 } });
    expect(await collect(await gateway.chatStream(callOf(catalog)))).toBe('at once');
    expect(health.circuit('a')).toBe('closed');
    expect(health.snapshot('a').latencyEwmaMs).toBeLessThan(60);
    // A whole answer that slow is a slow answer.
    await gateway.chat(callOf(catalog));
    expect(health.circuit('a')).toBe('open');
  });

  it('opens the circuit of a flapping deployment (half of its recent calls fail) though failures never come in a row', () => {
    const catalog = catalogOf(['a'], { circuit: { failure_threshold: 3 } });
    const health = new DeploymentHealth(catalog);
    const states: string[] = [];
    for (let i = 0; i < 8; i++) {
      // The router asks before each call: an open circuit gets no traffic.
      if (health.available('a')) health.begin('a')(i % 2 === 0 ? { ok: false, error: '503', countsAsFailure: true } : { ok: true, latencyMs: 5 });
      states.push(health.circuit('a'));
    }
    // The window needs 6 calls before it judges; the 7th call is the 4th failure of 7.
    expect(states).toEqual(['closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'open', 'open']);
  });

  it('sends a half-open trial that ends neither way (the client left, a 429) back to open, not closed', () => {
    let now = 1_000_000;
    const health = new DeploymentHealth(catalogOf(['a'], { circuit: { failure_threshold: 1, cooldown_ms: 5_000 } }), () => now);
    health.begin('a')({ ok: false, error: '503', countsAsFailure: true });
    expect(health.circuit('a')).toBe('open');
    now += 5_001;
    health.begin('a')({ ok: false, error: 'client went away', countsAsFailure: false });
    expect(health.circuit('a')).toBe('half_open');
    // Still on trial: the next failure opens it at once, whatever failure_threshold says.
    health.begin('a')({ ok: false, error: '503', countsAsFailure: true });
    expect(health.circuit('a')).toBe('open');
    now += 10_001;
    health.begin('a')({ ok: false, error: '429', countsAsFailure: false, retryAfterMs: 100 });
    expect(health.circuit('a')).not.toBe('closed');
    now += 101;
    health.begin('a')({ ok: true, latencyMs: 5 });
    expect(health.circuit('a')).toBe('closed');
  });

  it('caps an upstream Retry-After at cooldown_ms, and a peer closing the circuit does not end it', () => {
    let now = 1_000_000;
    const health = new DeploymentHealth(catalogOf(['a'], { circuit: { cooldown_ms: 5_000 } }), () => now);
    health.begin('a')({ ok: false, error: '429', countsAsFailure: false, retryAfterMs: 3_600_000 });
    expect(health.available('a')).toBe(false);
    health.applyPeerEvent({ deploymentId: 'a', circuit: 'closed', blockedUntil: 0 });
    now += 4_999;
    expect(health.available('a')).toBe(false);
    expect(health.pauseLeft('a')).toBe(1);
    now += 2;
    expect(health.available('a')).toBe(true);
  });

  it('keeps a mostly healthy deployment closed', () => {
    const health = new DeploymentHealth(catalogOf(['a']));
    for (let i = 0; i < 30; i++) health.begin('a')(i % 4 === 0 ? { ok: false, error: '503', countsAsFailure: true } : { ok: true, latencyMs: 5 });
    expect(health.circuit('a')).toBe('closed');
  });
});

describe('stream accounting', () => {
  it('ends the call when the client leaves before the stream is ever read (right after the headers)', async () => {
    const a = watchedStream('a', async function* (ctx) {
      yield delta('first');
      await sleep(60_000, undefined, { signal: ctx.signal });
    });
    const { gateway, catalog, health } = gatewayOf([a.provider]);
    const client = new AbortController();
    const scope = new UsageScope();
    const stream = await gateway.chatStream(callOf(catalog, client.signal, scope));
    expect(health.snapshot('a').inFlight).toBe(1);
    client.abort();
    const started = Date.now();
    const [calls] = await scope.settled(5_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(health.snapshot('a').inFlight).toBe(0);
    expect(a.ended).toBe(true);
    expect(calls.map((a) => a.outcome)).toEqual(['aborted']);
    expect(stream.attempts[0].usage!.completionTokens).toBe(0);
    // max_concurrent counts in-flight calls: a leak would refuse the next request.
    expect(health.available('a')).toBe(true);
  });

  it('cancels the upstream and settles the attempt with what it produced when the consumer stops early', async () => {
    const a = watchedStream('a', async function* () {
      for (let i = 0; i < 100; i++) yield delta(` word${i}`);
      yield finish;
    });
    const { gateway, catalog } = gatewayOf([a.provider]);
    const stream = await gateway.chatStream(callOf(catalog));
    let seen = 0;
    for await (const event of stream) if (event.type === 'delta' && ++seen === 3) break;
    expect(a.ended).toBe(true);
    expect(stream.attempts).toHaveLength(1);
    expect(stream.attempts[0].outcome).toBe('aborted');
    expect(stream.attempts[0].usage!.completionTokens).toBeGreaterThanOrEqual(3);
    expect(stream.attempts[0].usage!.promptTokens).toBeGreaterThan(0);
  });

  it('bills a continuation that was opening when the client left only once it is final', async () => {
    const a = scripted('a', [{ stream: [delta('one two'), new ProviderError('connection_dropped', 'cut')] }]);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Slow to its first event, and deaf to the abort until then (as an upstream mid-handshake).
    const b = watchedStream('b', async function* () {
      await gate;
      yield delta(' three');
      yield finish;
    });
    const { gateway, catalog } = gatewayOf([a, b.provider]);
    const client = new AbortController();
    const scope = new UsageScope();
    const stream = await gateway.chatStream(callOf(catalog, client.signal, scope));
    const reader = stream[Symbol.asyncIterator]();
    expect((await reader.next()).value).toEqual(delta('one two'));
    const reading = reader.next();
    await sleep(10);
    client.abort();
    let final = false;
    const settled = scope.settled(5_000).then((calls) => ((final = true), calls));
    await sleep(20);
    // b's attempt is still opening: billing it now would bill an unsettled 'ok' with no usage.
    expect(final).toBe(false);
    open();
    const [calls] = await settled;
    expect(await reading).toEqual({ done: true, value: undefined });
    expect(b.ended).toBe(true);
    expect(calls.map((x) => [x.deploymentId, x.outcome])).toEqual([
      ['a', 'connection_dropped'],
      ['b', 'aborted'],
    ]);
    expect(calls[1].usage).toBeDefined();
  });

  it('bills a resumed answer per attempt: each upstream for its own part', async () => {
    const a = scripted('a', [{ stream: [delta('one two three four'), new ProviderError('connection_dropped', 'cut')] }]);
    const b = scripted('b', [{ stream: [delta(' five six'), { type: 'finish', finishReason: 'stop' }] }]);
    const { gateway, catalog } = gatewayOf([a, b]);
    const stream = await gateway.chatStream(callOf(catalog));
    await collect(stream);
    const [first, second] = stream.attempts;
    expect(first.usage!.completionTokens).toBe(4);
    // The resumed attempt read the prefix as prompt and wrote only the continuation.
    expect(second.usage!.completionTokens).toBe(2);
    expect(second.usage!.promptTokens).toBe(first.usage!.promptTokens + 4);
  });
});

describe('chat completion chunks over a gateway stream', () => {
  it('cancels the upstream call when output moderation fails mid-stream, and ends with its error', async () => {
    const a = watchedStream('a', async function* () {
      for (let i = 0; ; i++) yield delta(` word${i}`);
    });
    const { gateway } = gatewayOf([a.provider]);
    const broken: GuardrailCheck = {
      id: 'broken',
      cost: 'local',
      check: async (text) => {
        if (text.includes('word2')) throw new Error('moderator broke');
        return { blocked: false };
      },
    };
    const completions = new ChatCompletions(gateway, new Guardrails([], [broken]));
    const ctx = { mode: 'guarded' as const, operation: 'createGuardedChatCompletion', traceId: 'trc_x', signal: new AbortController().signal, meter: null, log, models: null, trace: null };
    const answer = await completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }, ctx);
    if (answer.kind !== 'stream') throw new Error('expected a stream');
    const contents: string[] = [];
    const reading = (async () => {
      for await (const chunk of answer.stream) contents.push(chunk.choices[0]?.delta.content ?? '');
    })();
    await expect(reading).rejects.toThrow('moderator broke');
    expect(contents).toEqual(['', ' word0', ' word1']);
    expect(a.ended).toBe(true);
  });
});
