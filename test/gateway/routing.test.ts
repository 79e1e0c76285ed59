// Route plans: the selector rule, the documented auto-routing tiers, capabilities and the
// context window, all decided before any upstream call; and the catalog's validation.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../server/errors.js';
import { buildCatalog, CatalogError, defaultConfig, loadCatalog } from '../../server/gateway/catalog.js';
import { classify, planRoute, type RequestFeatures } from '../../server/gateway/routing.js';

const catalog = buildCatalog(
  {
    providers: [{ id: 'p', type: 'local' }],
    deployments: [
      { id: 'd-small', provider: 'p', model: 's' },
      { id: 'd-big', provider: 'p', model: 'b' },
      { id: 'd-vision', provider: 'p', model: 'v' },
      { id: 'd-emb', provider: 'p', model: 'e' },
    ],
    models: [
      { id: 'small', family: 'openai', context_window: 1_000, max_output_tokens: 200, deployments: ['d-small'] },
      { id: 'big', family: 'anthropic', context_window: 100_000, max_output_tokens: 8_000, capabilities: { tools: true }, deployments: ['d-big'] },
      { id: 'vision', family: 'anthropic', context_window: 50_000, max_output_tokens: 4_000, capabilities: { tools: true, vision: true }, deployments: ['d-vision'] },
      { id: 'emb', family: 'openai', type: 'embedding', context_window: 512, dimensions: 64, deployments: ['d-emb'] },
    ],
    routing: { tiers: { tier_1: ['small'], tier_2: ['big'], tier_3: ['vision', 'big'] } },
  },
  'test',
  {},
);

const base: RequestFeatures = { promptTokens: 20, maxTokens: undefined, hasTools: false, hasImages: false, jsonSchema: false, messageCount: 1, userText: 'What is hope?' };

function refusal(run: () => unknown): [string, number, string | undefined] {
  try {
    run();
  } catch (error) {
    const e = error as ApiError;
    return [e.errorName, e.status, e.options.param];
  }
  throw new Error('expected a refusal');
}

describe('routing selectors', () => {
  it.each([
    [{}, 'auto_routing'],
    [{ auto_routing: false }, 'auto_routing'],
    [{ auto_routing: true, model: 'small' }, 'model'],
    [{ model: 'small', model_family: 'openai' }, 'model_family'],
    [{ auto_routing: true, model: 'small', model_family: 'openai' }, 'model_family'],
  ])('needs exactly one of auto_routing, model, model_family: %j is 400', (selector, param) => {
    expect(refusal(() => planRoute(catalog, selector, base))).toEqual(['ROUTING_SELECTOR_INVALID', 400, param]);
  });

  it('direct selection: unknown, embedding-only and incapable models are 400 before any call', () => {
    expect(refusal(() => planRoute(catalog, { model: 'nope' }, base))).toEqual(['UNSUPPORTED_MODEL', 400, 'model']);
    expect(refusal(() => planRoute(catalog, { model: 'emb' }, base))).toEqual(['UNSUPPORTED_MODEL', 400, 'model']);
    expect(refusal(() => planRoute(catalog, { model: 'small' }, { ...base, hasImages: true }))).toEqual(['UNSUPPORTED_MODEL', 400, 'model']);
    expect(refusal(() => planRoute(catalog, { model: 'small' }, { ...base, hasTools: true }))).toEqual(['UNSUPPORTED_MODEL', 400, 'model']);
    expect(planRoute(catalog, { model: 'big' }, base)).toMatchObject({ mechanism: 'direct_model_selection', tier: null, confidence: null });
  });

  it('checks the context window (prompt estimate + max tokens) and the output limit', () => {
    expect(refusal(() => planRoute(catalog, { model: 'small' }, { ...base, promptTokens: 900, maxTokens: 150 }))).toEqual(['CONTEXT_WINDOW_EXCEEDED', 400, 'messages']);
    expect(refusal(() => planRoute(catalog, { model: 'small' }, { ...base, maxTokens: 201 }))).toEqual(['CONTEXT_WINDOW_EXCEEDED', 400, 'max_tokens']);
    expect(planRoute(catalog, { model: 'small' }, { ...base, promptTokens: 800, maxTokens: 200 }).models.map((m) => m.id)).toEqual(['small']);
  });

  it('model_family: the family\'s capable models; an unconfigured family is 400', () => {
    expect(planRoute(catalog, { model_family: 'anthropic' }, base).models.map((m) => m.id)).toEqual(['big', 'vision']);
    expect(planRoute(catalog, { model_family: 'anthropic' }, { ...base, hasImages: true }).models.map((m) => m.id)).toEqual(['vision']);
    expect(refusal(() => planRoute(catalog, { model_family: 'google' }, base))).toEqual(['UNSUPPORTED_MODEL', 400, 'model_family']);
  });
});

describe('auto-routing', () => {
  it.each([
    [{}, 'tier_1'],
    [{ promptTokens: 799 }, 'tier_1'],
    [{ promptTokens: 800 }, 'tier_2'],
    [{ messageCount: 9 }, 'tier_2'],
    [{ hasTools: true }, 'tier_2'],
    [{ jsonSchema: true }, 'tier_2'],
    [{ hasImages: true }, 'tier_3'],
    [{ userText: 'Explain step by step why the sky is blue' }, 'tier_3'],
    [{ userText: 'Fix this:\n```js\nx()\n```' }, 'tier_3'],
    [{ promptTokens: 4_000 }, 'tier_3'],
  ])('%j → %s', (overrides, tier) => {
    expect(classify({ ...base, ...overrides }).tier).toBe(tier);
  });

  it('is surer of a short plain question than of one near a threshold', () => {
    expect(classify({ ...base, promptTokens: 10 }).confidence).toBeGreaterThan(classify({ ...base, promptTokens: 700 }).confidence);
    for (const promptTokens of [0, 500, 799, 800, 4_000, 20_000]) {
      const { confidence } = classify({ ...base, promptTokens });
      expect(confidence).toBeGreaterThan(0);
      expect(confidence).toBeLessThanOrEqual(1);
    }
  });

  it('tries the tier\'s models first, then the others, keeping only those that can take the request', () => {
    expect(planRoute(catalog, { auto_routing: true }, base)).toMatchObject({ mechanism: 'auto_routing', tier: 'tier_1' });
    expect(planRoute(catalog, { auto_routing: true }, base).models.map((m) => m.id)).toEqual(['small', 'big', 'vision']);
    // Too long for `small`: tier_1 is still the tier, the bigger models serve it.
    expect(planRoute(catalog, { auto_routing: true }, { ...base, promptTokens: 700, maxTokens: 400 }).models.map((m) => m.id)).toEqual(['big', 'vision']);
    expect(planRoute(catalog, { auto_routing: true }, { ...base, hasImages: true }).models.map((m) => m.id)).toEqual(['vision']);
    expect(refusal(() => planRoute(catalog, { auto_routing: true }, { ...base, promptTokens: 200_000 }))).toEqual(['CONTEXT_WINDOW_EXCEEDED', 400, 'messages']);
  });
});

describe('model fallbacks in the plan', () => {
  const chain = buildCatalog(
    {
      providers: [{ id: 'p', type: 'local' }],
      deployments: ['a', 'b', 'c', 'd', 'big', 'huge', 'e'].map((id) => ({ id, provider: 'p', model: id })),
      models: [
        { id: 'a', family: 'openai', context_window: 1_000, max_output_tokens: 100, deployments: ['a'], fallbacks: ['b', 'c'], context_window_fallbacks: ['big'] },
        { id: 'b', family: 'openai', context_window: 1_000, max_output_tokens: 100, deployments: ['b'], fallbacks: ['d'] },
        { id: 'c', family: 'anthropic', context_window: 1_000, max_output_tokens: 100, capabilities: { tools: true }, deployments: ['c'], fallbacks: ['b'] },
        { id: 'd', family: 'openai', context_window: 1_000, max_output_tokens: 100, deployments: ['d'] },
        { id: 'big', family: 'openai', context_window: 10_000, max_output_tokens: 100, deployments: ['big'], context_window_fallbacks: ['huge'] },
        { id: 'huge', family: 'openai', context_window: 100_000, max_output_tokens: 100, deployments: ['huge'] },
        { id: 'e', family: 'openai', type: 'embedding', context_window: 100, dimensions: 8, deployments: ['e'] },
      ],
      routing: { tiers: { tier_1: ['a'], tier_2: ['a'], tier_3: ['a'] } },
    },
    'test',
    {},
  );
  const ids = (plan: { models: { id: string }[]; fallbacks: { id: string }[] }) => [plan.models.map((m) => m.id), plan.fallbacks.map((m) => m.id)];

  it("follows the plan's models with their fallbacks, then the fallbacks' own, each model once", () => {
    expect(ids(planRoute(chain, { model: 'a' }, base))).toEqual([['a'], ['b', 'c', 'd']]);
    // c falls back to b, which falls back to d.
    expect(ids(planRoute(chain, { model: 'c' }, base))).toEqual([['c'], ['b', 'd']]);
    expect(ids(planRoute(chain, { auto_routing: true }, base))).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('keeps only the fallbacks that can take the request', () => {
    expect(ids(planRoute(chain, { model: 'c' }, { ...base, hasTools: true }))).toEqual([['c'], []]);
  });

  it('plans a prompt too big for the model on the first context-window fallback it fits, before any call', () => {
    expect(ids(planRoute(chain, { model: 'a' }, { ...base, promptTokens: 5_000 }))).toEqual([['big'], []]);
    expect(ids(planRoute(chain, { model: 'a' }, { ...base, promptTokens: 50_000 }))).toEqual([['huge'], []]);
    expect(ids(planRoute(chain, { auto_routing: true }, { ...base, promptTokens: 5_000 }))).toEqual([['big'], []]);
    expect(refusal(() => planRoute(chain, { model: 'a' }, { ...base, promptTokens: 500_000 }))).toEqual(['CONTEXT_WINDOW_EXCEEDED', 400, 'messages']);
    expect(refusal(() => planRoute(chain, { model: 'b' }, { ...base, promptTokens: 5_000 }))).toEqual(['CONTEXT_WINDOW_EXCEEDED', 400, 'messages']);
  });

  it('names every bad fallback at start: unknown, not a chat model, the model itself, and each cycle', () => {
    const error = catalogError({
      providers: [{ id: 'p', type: 'local' }],
      deployments: [{ id: 'd', provider: 'p', model: 'x' }],
      models: [
        { id: 'a', family: 'openai', context_window: 10, max_output_tokens: 5, deployments: ['d'], fallbacks: ['b', 'ghost'], content_policy_fallbacks: ['a'] },
        { id: 'b', family: 'openai', context_window: 10, max_output_tokens: 5, deployments: ['d'], fallbacks: ['c'] },
        { id: 'c', family: 'openai', context_window: 10, max_output_tokens: 5, deployments: ['d'], fallbacks: ['a'], context_window_fallbacks: ['e'] },
        { id: 'e', family: 'openai', type: 'embedding', context_window: 10, dimensions: 8, deployments: ['d'], fallbacks: ['a'] },
      ],
      routing: { tiers: { tier_1: ['a'], tier_2: ['a'], tier_3: ['a'] } },
    });
    expect(error.problems).toEqual([
      'model "a" fallbacks: unknown model "ghost"',
      'model "e": fallbacks are for chat models (embeddings never fail over)',
      'fallbacks form a cycle: a → b → c → a',
      'model "c" context_window_fallbacks: "e" is not a chat model',
      'model "a": content_policy_fallbacks names the model itself',
    ]);
  });
});

/** The CatalogError a config is refused with. */
function catalogError(raw: unknown): CatalogError {
  try {
    buildCatalog(raw, 'gateway.yaml', {});
  } catch (e) {
    return e as CatalogError;
  }
  throw new Error('expected the config to be refused');
}

describe('catalog', () => {
  it('names every problem of a config file at once', () => {
    let error: CatalogError | undefined;
    try {
      buildCatalog(
        {
          providers: [{ id: 'up', type: 'openai', api_key_env: 'MISSING_KEY' }],
          deployments: [{ id: 'd', provider: 'ghost', model: 'x' }],
          models: [
            { id: 'chat', family: 'openai', context_window: 10, deployments: ['d', 'nowhere'] },
            { id: 'chat', family: 'martian', context_window: 10, deployments: ['d'] },
          ],
        },
        'gateway.yaml',
        {},
      );
    } catch (e) {
      error = e as CatalogError;
    }
    expect(error).toBeInstanceOf(CatalogError);
    expect(error!.problems.join('\n')).toMatch(/models\.1\.family/);
  });

  it('checks references between providers, deployments, models and tiers', () => {
    const error = catalogError({
      providers: [{ id: 'up', type: 'openai', api_key_env: 'MISSING_KEY' }],
      deployments: [{ id: 'd', provider: 'ghost', model: 'x' }],
      models: [{ id: 'chat', family: 'openai', context_window: 10, deployments: ['d', 'nowhere'] }],
      routing: { tiers: { tier_1: ['chat'], tier_2: ['unknown'] } },
    });
    expect(error.problems).toEqual([
      'provider "up": base_url is required for type openai',
      'provider "up": environment variable MISSING_KEY is not set',
      'deployment "d": unknown provider "ghost"',
      'model "chat": unknown deployment "nowhere"',
      'model "chat": chat models need max_output_tokens',
      'routing.tiers.tier_2: unknown model "unknown"',
      'routing.tiers.tier_3: missing (auto_routing needs a model per tier)',
    ]);
    expect(error.message).toContain('gateway.yaml');
  });

  it('holds the local models with nothing configured, and OpenAI / Anthropic once their key is set', () => {
    const ids = (env: NodeJS.ProcessEnv) => [...buildCatalog(defaultConfig(env), 'default', env).models.keys()];
    expect(ids({})).toEqual(['local-chat', 'local-embedding']);
    expect(ids({ OPENAI_API_KEY: 'sk-test' })).toEqual(expect.arrayContaining(['gloo-openai-gpt-5-mini', 'gloo-openai-text-embedding-3-small', 'local-chat']));
    expect(ids({ ANTHROPIC_API_KEY: 'sk-ant' })).toEqual(expect.arrayContaining(['gloo-anthropic-claude-haiku-4.5', 'local-chat']));
    const withKey = buildCatalog(defaultConfig({ OPENAI_API_KEY: 'sk-test' }), 'default', { OPENAI_API_KEY: 'sk-test' });
    expect(withKey.providers.get('openai')!.apiKey).toBe('sk-test');
    expect(withKey.tiers.tier_1).toEqual(['gloo-openai-gpt-5-mini', 'local-chat']);
  });

  it('reads GATEWAY_CONFIG and reports an unreadable file by name', () => {
    expect(() => loadCatalog({ GATEWAY_CONFIG: '/nonexistent/gateway.yaml' })).toThrow(/\/nonexistent\/gateway\.yaml[\s\S]*cannot read/);
  });
});

describe('the example gateway config', () => {
  it('is valid, so the README example works as written', () => {
    const env = { OPENAI_API_KEY: 'k', AZURE_OPENAI_KEY: 'k', ANTHROPIC_API_KEY: 'k' };
    const catalog = loadCatalog({ ...env, GATEWAY_CONFIG: new URL('../../examples/gateway.yaml', import.meta.url).pathname });
    expect(catalog.models.get('gloo-openai-gpt-5-mini')!.deployments).toEqual(['openai-gpt-5-mini', 'azure-gpt-5-mini']);
    expect(catalog.deployments.get('azure-gpt-5-mini')!.max_concurrent).toBe(64);
    expect(catalog.fallbacks.get('gloo-open-source-llama-3.3-70b')!.fallbacks.map((m) => m.id)).toEqual(['gloo-openai-gpt-5-mini', 'gloo-anthropic-claude-haiku-4.5']);
  });
});
