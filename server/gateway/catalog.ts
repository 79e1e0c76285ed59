// The model catalog: providers (upstream endpoints), deployments (a provider serving one
// upstream model, with a weight and a concurrency limit) and models (what callers name,
// with family, limits, capabilities and prices). It comes from one config file
// (GATEWAY_CONFIG, YAML or JSON), validated at start with every problem named; without a
// file it holds the local models, plus OpenAI's or Anthropic's common models when
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { PREFIX_MODES, type PrefixMode, type ProviderKind } from '../providers/types.js';
import { ImageUrlPolicy } from './image-urls.js';

export const MODEL_FAMILIES = ['openai', 'anthropic', 'google', 'open source', 'local'] as const;
export type ModelFamily = (typeof MODEL_FAMILIES)[number];
export const TIERS = ['tier_1', 'tier_2', 'tier_3'] as const;
export type Tier = (typeof TIERS)[number];

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only');
const ms = (fallback: number) => z.number().int().min(1).default(fallback);

const providerSchema = z.object({
  id,
  type: z.enum(['openai', 'anthropic', 'local']),
  /** Base URL of the upstream API, e.g. https://api.openai.com/v1 (not for `local`). */
  base_url: z.url().optional(),
  /** Name of the environment variable holding the key; the key itself never goes in the file. */
  api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name').optional(),
  headers: z.record(z.string(), z.string()).default({}),
  /** Azure-style deployments: `{base_url}/openai/deployments/{model}/…?api-version=`. */
  azure_api_version: z.string().optional(),
  /**
   * How its deployments continue an assistant prefix (stream resume), see PrefixMode.
   * Default: `none` for type openai (OpenAI answers a trailing assistant message afresh),
   * `native` for anthropic and local.
   */
  prefix: z.enum(PREFIX_MODES).optional(),
});

const deploymentSchema = z.object({
  id,
  provider: id,
  /** The upstream's own model name (Azure: the deployment name). */
  model: z.string().min(1),
  /** Share of its model's traffic among deployments of the same `order`. */
  weight: z.number().positive().default(1),
  /** Preference: a deployment takes traffic only while none of a lower order is available. */
  order: z.number().int().min(1).default(1),
  /** Requests in flight on this deployment at most; more go to its peers, else wait for none: 503. */
  max_concurrent: z.number().int().positive().default(256),
  /** The provider's `prefix` mode, for this deployment (a vLLM model behind a router, say). */
  prefix: z.enum(PREFIX_MODES).optional(),
  /** The upstream's image model for the Responses `image_generation` tool (default: `model`). */
  image_model: z.string().min(1).optional(),
  /**
   * The trial call an open circuit gets (recovery): the smallest real request, a prompt with
   * `max_tokens` 1 (an embedding deployment embeds the prompt). Set it for an upstream that
   * refuses such a request.
   */
  probe: z.object({ prompt: z.string().min(1).default('Hi'), max_tokens: z.number().int().min(1).default(1) }).default({ prompt: 'Hi', max_tokens: 1 }),
});

/** How a model, a route or the whole gateway retries before leaving a model (see `failover`). */
const retrySchema = z.object({
  /** Retries of the same deployment after a transient 5xx or a reset, before leaving the model (0: none). */
  retries: z.number().int().min(0).max(3).optional(),
  /** An upstream Retry-After up to this long is waited out, then the same deployment retried; a longer one is not. */
  retry_after_cap_ms: z.number().int().min(0).optional(),
});

const price = z.number().min(0);
/**
 * USD per 1M tokens (per_image: per image drawn). Prompt-cache prices default to the
 * multipliers OpenAI and Anthropic use: a cached read 0.1 × input, a cache write 1.25 ×
 * input (2 × when kept for an hour); a cached read is never billed as full input.
 */
const pricingSchema = z
  .object({
    input_per_1m: price,
    output_per_1m: price,
    per_image: price.default(0),
    cached_input_per_1m: price.optional(),
    cache_write_per_1m: price.optional(),
    cache_write_1h_per_1m: price.optional(),
  })
  .transform((p) => ({
    ...p,
    cached_input_per_1m: p.cached_input_per_1m ?? p.input_per_1m * 0.1,
    cache_write_per_1m: p.cache_write_per_1m ?? p.input_per_1m * 1.25,
    cache_write_1h_per_1m: p.cache_write_1h_per_1m ?? p.input_per_1m * 2,
  }));

const capabilitiesSchema = z.object({
  tools: z.boolean().default(false),
  reasoning: z.boolean().default(false),
  vision: z.boolean().default(false),
  streaming: z.boolean().default(true),
  image_generation: z.boolean().default(false),
});

const modelSchema = z.object({
  id,
  family: z.enum(MODEL_FAMILIES),
  type: z.enum(['chat', 'embedding']).default('chat'),
  context_window: z.number().int().positive(),
  max_output_tokens: z.number().int().positive().nullable().default(null),
  /** Embedding models: the native size and the sizes `dimensions` may ask for. */
  dimensions: z.number().int().positive().optional(),
  shortenable: z.boolean().default(false),
  capabilities: capabilitiesSchema.default({ tools: false, reasoning: false, vision: false, streaming: true, image_generation: false }),
  pricing: pricingSchema.default({ input_per_1m: 0, output_per_1m: 0, per_image: 0, cached_input_per_1m: 0, cache_write_per_1m: 0, cache_write_1h_per_1m: 0 }),
  deprecated: z.boolean().default(false),
  deployments: z.array(id).min(1),
  /** Other chat models tried, in order, once this one's deployments all failed (their own fallbacks after them). */
  fallbacks: z.array(id).default([]),
  /** Larger models for a prompt that does not fit this one: chosen before any call, or after the upstream's context-length refusal. */
  context_window_fallbacks: z.array(id).default([]),
  /** Opt-in: models tried after this one's upstream refused the request by its content filter (another provider's may accept it). */
  content_policy_fallbacks: z.array(id).default([]),
  /** This model's retry policy (over `failover`'s; a route's own settings win). */
  failover: retrySchema.default({}),
  /**
   * The response cache (cache/response-cache.ts) for this model's chat completions: answers are
   * kept `ttl_ms`, shared between requests of one API key (`scope: key`) or of the whole
   * organization. Absent: never cached.
   */
  cache: z
    .object({
      ttl_ms: z.number().int().min(1_000).max(7 * 24 * 3_600_000),
      scope: z.enum(['key', 'organization']).default('key'),
    })
    .optional(),
});

export const FALLBACK_KINDS = ['fallbacks', 'context_window_fallbacks', 'content_policy_fallbacks'] as const;
export type FallbackKind = (typeof FALLBACK_KINDS)[number];

const configSchema = z.object({
  providers: z.array(providerSchema).default([]),
  deployments: z.array(deploymentSchema).default([]),
  models: z.array(modelSchema).default([]),
  routing: z
    .object({
      /** Auto-routing: the models each tier tries, in order. */
      tiers: z.partialRecord(z.enum(TIERS), z.array(id).min(1)).default({}),
      /** model_family: the family's models in preference order (default: catalog order). */
      families: z.partialRecord(z.enum(MODEL_FAMILIES), z.array(id).min(1)).default({}),
    })
    .default({ tiers: {}, families: {} }),
  timeouts: z
    .object({ connect_ms: ms(10_000), first_token_ms: ms(60_000), idle_ms: ms(30_000) })
    .default({ connect_ms: 10_000, first_token_ms: 60_000, idle_ms: 30_000 }),
  failover: z
    .object({
      /** Upstream calls one request may make in all (first try, failovers, stream resumes). */
      max_attempts: z.number().int().min(1).max(10).default(3),
      /** An upstream Retry-After longer than this is not waited for. */
      retry_after_cap_ms: z.number().int().min(0).default(2_000),
      /** Retries of the same deployment after a transient 5xx or a reset, before leaving its model (0: none). */
      retries: z.number().int().min(0).max(3).default(1),
      /** Continue a broken stream on another deployment with the partial answer as prefix. */
      resume_streams: z.boolean().default(true),
      /** Per operation (operationId), e.g. `createChatCompletionV1: {resume_streams: false, retries: 0}`. */
      routes: z.record(z.string(), retrySchema.extend({ resume_streams: z.boolean().optional() })).default({}),
    })
    .default({ max_attempts: 3, retry_after_cap_ms: 2_000, retries: 1, resume_streams: true, routes: {} }),
  circuit: z
    .object({
      /** Consecutive failures that open a deployment's circuit. */
      failure_threshold: z.number().int().min(1).default(3),
      /** Share of failures among a deployment's last 10 calls (at least 6) that opens it: a flapping upstream. null: off. */
      failure_rate: z.number().gt(0).max(1).nullable().default(0.5),
      /** How long an open circuit refuses traffic before one half-open trial. */
      cooldown_ms: z.number().int().min(100).default(30_000),
      /** Answers slower than this count as failures. */
      slow_ms: z.number().int().min(1).default(60_000),
      /** Background probe of every provider (GET /models; 0: off): health shows one that is down or refuses the key. */
      probe_interval_ms: z.number().int().min(0).default(15_000),
      /** An open circuit's first trial call (the deployment's `probe`) comes this long after it opened (0: no trial calls, only the cooldown). */
      trial_ms: z.number().int().min(0).default(1_000),
      /** Each failed trial doubles the wait for the next, up to this; every wait is jittered (half to all of it). */
      trial_max_ms: z.number().int().min(1).default(5_000),
      /** A trial call that takes longer fails. */
      trial_timeout_ms: z.number().int().min(1).default(3_000),
    })
    .default({ failure_threshold: 3, failure_rate: 0.5, cooldown_ms: 30_000, slow_ms: 60_000, probe_interval_ms: 15_000, trial_ms: 1_000, trial_max_ms: 5_000, trial_timeout_ms: 3_000 }),
  guardrails: z
    .object({
      /** The local rule set (server/gateway/guardrails.ts) on input and output. */
      rules: z.boolean().default(true),
      /** An OpenAI-compatible /moderations endpoint of one of the providers, beside the rules. */
      moderation: z
        .object({
          provider: id,
          model: z.string().min(1).default('omni-moderation-latest'),
          input: z.boolean().default(true),
          output: z.boolean().default(true),
          /** When it cannot answer: let the text through (logged) or block it. */
          on_error: z.enum(['allow', 'block']).default('allow'),
          timeout_ms: ms(5_000),
        })
        .optional(),
    })
    .default({ rules: true }),
  /** Bounds of the response cache: its memory (per instance, without Redis) and one answer's size. */
  response_cache: z
    .object({
      max_bytes: z.number().int().min(1).default(64 * 1024 * 1024),
      max_entry_bytes: z.number().int().min(1).default(1024 * 1024),
    })
    .default({ max_bytes: 64 * 1024 * 1024, max_entry_bytes: 1024 * 1024 }),
  /** Image URLs of requests (image-urls.ts): https and data:image only, public hosts unless allowed here. */
  image_urls: z
    .object({
      allow_private_hosts: z.boolean().default(false),
      allow_hosts: z.array(z.string().min(1)).default([]),
    })
    .default({ allow_private_hosts: false, allow_hosts: [] }),
});

export type GatewayFileConfig = z.infer<typeof configSchema>;
export type ProviderConfig = z.infer<typeof providerSchema> & { apiKey?: string };
/** A deployment as the gateway uses it: its prefix mode resolved. */
export type DeploymentConfig = z.infer<typeof deploymentSchema> & { prefix: PrefixMode };
export type ModelConfig = z.infer<typeof modelSchema>;

/** Who answered (or is answering) a call. */
export interface Served {
  model: ModelConfig;
  deployment: DeploymentConfig;
  /** The provider id of the catalog (`openai`, `anthropic`, `local`, …). */
  provider: string;
}

export interface Catalog {
  providers: ReadonlyMap<string, ProviderConfig>;
  deployments: ReadonlyMap<string, DeploymentConfig & { kind: ProviderKind }>;
  models: ReadonlyMap<string, ModelConfig>;
  /** Each chat model's fallbacks of each kind, resolved once: its own list, then theirs (breadth first, each model once). */
  fallbacks: ReadonlyMap<string, Readonly<Record<FallbackKind, readonly ModelConfig[]>>>;
  tiers: Readonly<Record<Tier, readonly string[]>>;
  families: Readonly<Partial<Record<ModelFamily, readonly string[]>>>;
  timeouts: GatewayFileConfig['timeouts'];
  failover: GatewayFileConfig['failover'];
  circuit: GatewayFileConfig['circuit'];
  guardrails: GatewayFileConfig['guardrails'];
  responseCache: GatewayFileConfig['response_cache'];
  /** Which image URLs may reach an upstream. */
  imageUrls: ImageUrlPolicy;
}

export class CatalogError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`Invalid gateway configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'CatalogError';
  }
}

/** The catalog from GATEWAY_CONFIG, else the built-in default for the environment. */
export function loadCatalog(env: NodeJS.ProcessEnv = process.env): Catalog {
  const file = env.GATEWAY_CONFIG;
  if (!file) return buildCatalog(defaultConfig(env), 'built-in default', env);
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CatalogError(file, [`cannot read: ${(error as Error).message}`]);
  }
  return buildCatalog(raw, file, env);
}

export function buildCatalog(raw: unknown, source: string, env: NodeJS.ProcessEnv = process.env): Catalog {
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new CatalogError(
      source,
      parsed.error.issues.map((issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`),
    );
  }
  const config = parsed.data;
  const problems: string[] = [];
  const unique = <T extends { id: string }>(what: string, list: T[]) => {
    const map = new Map<string, T>();
    for (const entry of list) {
      if (map.has(entry.id)) problems.push(`${what} "${entry.id}" is defined twice`);
      map.set(entry.id, entry);
    }
    return map;
  };
  const providers = unique('provider', config.providers) as Map<string, ProviderConfig>;
  for (const provider of providers.values()) {
    if (provider.type !== 'local' && !provider.base_url) problems.push(`provider "${provider.id}": base_url is required for type ${provider.type}`);
    if (provider.api_key_env) {
      provider.apiKey = env[provider.api_key_env];
      if (!provider.apiKey) problems.push(`provider "${provider.id}": environment variable ${provider.api_key_env} is not set`);
    }
  }
  const deployments = new Map<string, DeploymentConfig & { kind: ProviderKind }>();
  for (const deployment of unique('deployment', config.deployments).values()) {
    const provider = providers.get(deployment.provider);
    if (!provider) problems.push(`deployment "${deployment.id}": unknown provider "${deployment.provider}"`);
    const kind = provider?.type ?? 'local';
    const prefix = deployment.prefix ?? provider?.prefix ?? (kind === 'openai' ? 'none' : 'native');
    if (kind !== 'openai' && (prefix === 'vllm' || prefix === 'mistral')) {
      problems.push(`deployment "${deployment.id}": prefix ${prefix} is for OpenAI-compatible upstreams (${kind} continues a prefix natively, or use none)`);
    }
    deployments.set(deployment.id, { ...deployment, prefix, kind });
  }
  const models = unique('model', config.models);
  for (const model of models.values()) {
    for (const d of model.deployments) {
      const deployment = deployments.get(d);
      if (!deployment) problems.push(`model "${model.id}": unknown deployment "${d}"`);
      else if (model.type === 'embedding' && deployment.kind === 'anthropic') problems.push(`model "${model.id}": Anthropic has no embeddings API (deployment "${d}")`);
    }
    if (model.type === 'embedding' && !model.dimensions) problems.push(`model "${model.id}": embedding models need dimensions`);
    if (model.type === 'chat' && !model.max_output_tokens) problems.push(`model "${model.id}": chat models need max_output_tokens`);
    if (model.type === 'embedding' && model.cache) problems.push(`model "${model.id}": the response cache is for chat models`);
  }
  const chatModel = (where: string, modelId: string) => {
    const model = models.get(modelId);
    if (!model) problems.push(`${where}: unknown model "${modelId}"`);
    else if (model.type !== 'chat') problems.push(`${where}: "${modelId}" is not a chat model`);
  };
  for (const [tier, list] of Object.entries(config.routing.tiers)) for (const m of list ?? []) chatModel(`routing.tiers.${tier}`, m);
  for (const [family, list] of Object.entries(config.routing.families)) {
    for (const m of list ?? []) {
      chatModel(`routing.families.${family}`, m);
      if (models.get(m) && models.get(m)!.family !== family) problems.push(`routing.families.${family}: "${m}" is of family ${models.get(m)!.family}`);
    }
  }
  checkFallbacks(models, chatModel, problems);
  const moderation = config.guardrails.moderation;
  if (moderation) {
    const provider = providers.get(moderation.provider);
    if (!provider) problems.push(`guardrails.moderation: unknown provider "${moderation.provider}"`);
    else if (provider.type !== 'openai') problems.push(`guardrails.moderation: provider "${moderation.provider}" must be OpenAI-compatible`);
  }
  const chatModels = [...models.values()].filter((m) => m.type === 'chat' && !m.deprecated);
  if (chatModels.length > 0) {
    for (const tier of TIERS) if (!config.routing.tiers[tier]) problems.push(`routing.tiers.${tier}: missing (auto_routing needs a model per tier)`);
  }
  if (problems.length > 0) throw new CatalogError(source, problems);
  return {
    providers,
    deployments,
    models,
    fallbacks: resolveFallbacks(models),
    tiers: config.routing.tiers as Record<Tier, string[]>,
    families: config.routing.families,
    timeouts: config.timeouts,
    failover: config.failover,
    circuit: config.circuit,
    guardrails: config.guardrails,
    responseCache: config.response_cache,
    imageUrls: new ImageUrlPolicy(config.image_urls),
  };
}

/** Each fallback names another chat model of the catalog, and no kind of fallback loops back (each cycle named). */
function checkFallbacks(models: ReadonlyMap<string, ModelConfig>, chatModel: (where: string, id: string) => void, problems: string[]): void {
  for (const kind of FALLBACK_KINDS) {
    for (const model of models.values()) {
      const list = model[kind];
      if (list.length > 0 && model.type !== 'chat') problems.push(`model "${model.id}": ${kind} are for chat models (embeddings never fail over)`);
      for (const id of list) {
        if (id === model.id) problems.push(`model "${model.id}": ${kind} names the model itself`);
        else chatModel(`model "${model.id}" ${kind}`, id);
      }
    }
    // Depth-first over the kind's edges: a model met again on the current path closes a cycle.
    const done = new Set<string>();
    const reported = new Set<string>();
    const visit = (id: string, path: string[]) => {
      const at = path.indexOf(id);
      if (at >= 0) {
        const cycle = [...path.slice(at), id];
        const key = [...cycle.slice(0, -1)].sort().join(' ');
        if (!reported.has(key)) problems.push(`${kind} form a cycle: ${cycle.join(' → ')}`);
        reported.add(key);
        return;
      }
      const model = models.get(id);
      if (done.has(id) || !model) return;
      for (const next of model[kind]) if (next !== id) visit(next, [...path, id]);
      done.add(id);
    };
    for (const id of models.keys()) visit(id, []);
  }
}

function resolveFallbacks(models: ReadonlyMap<string, ModelConfig>): Map<string, Record<FallbackKind, ModelConfig[]>> {
  const chain = (model: ModelConfig, kind: FallbackKind): ModelConfig[] => {
    const seen = new Set([model.id]);
    const out: ModelConfig[] = [];
    for (let i = -1; i < out.length; i++) {
      for (const id of (i < 0 ? model : out[i])[kind]) {
        if (seen.has(id)) continue;
        seen.add(id);
        out.push(models.get(id)!);
      }
    }
    return out;
  };
  const resolved = new Map<string, Record<FallbackKind, ModelConfig[]>>();
  for (const model of models.values()) {
    resolved.set(model.id, { fallbacks: chain(model, 'fallbacks'), context_window_fallbacks: chain(model, 'context_window_fallbacks'), content_policy_fallbacks: chain(model, 'content_policy_fallbacks') });
  }
  return resolved;
}
/** OpenAI's prompt caching: a cached read at a tenth of input; writes cost nothing extra (it reports none). */
const OPENAI_CACHE = (input: number) => ({ cached_input_per_1m: input / 10, cache_write_per_1m: input, cache_write_1h_per_1m: input });

const LOCAL_CHAT = {
  id: 'local-chat',
  family: 'local',
  type: 'chat',
  context_window: 32_768,
  max_output_tokens: 4_096,
  // image_generation: the local provider draws a deterministic PNG (providers/local/image.ts).
  capabilities: { tools: true, reasoning: false, vision: false, streaming: true, image_generation: true },
  deployments: ['local-chat'],
};

/**
 * No config file: the local models always (the server answers with nothing configured),
 * and the common models of OpenAI and Anthropic when their key is set. Auto-routing then
 * prefers a real upstream and keeps `local` as the last resort of every tier.
 */
export function defaultConfig(env: NodeJS.ProcessEnv): unknown {
  const providers: unknown[] = [{ id: 'local', type: 'local' }];
  const deployments: unknown[] = [
    { id: 'local-chat', provider: 'local', model: 'local-chat' },
    { id: 'local-embedding', provider: 'local', model: 'local-embedding' },
  ];
  const models: unknown[] = [
    LOCAL_CHAT,
    { id: 'local-embedding', family: 'local', type: 'embedding', context_window: 2_048, dimensions: 512, shortenable: true, deployments: ['local-embedding'] },
  ];
  const tiers: Record<Tier, string[]> = { tier_1: [], tier_2: [], tier_3: [] };
  const families: Partial<Record<ModelFamily, string[]>> = { local: ['local-chat'] };
  const vision = { tools: true, reasoning: true, vision: true, streaming: true, image_generation: false };
  // OpenAI's chat models call the image tool; gpt-image-1 (the deployments' image_model) draws,
  // priced per image (its medium quality at 1024×1024).
  const openai = { ...vision, image_generation: true };
  if (env.OPENAI_API_KEY) {
    providers.push({ id: 'openai', type: 'openai', base_url: env.OPENAI_BASE_URL || 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY' });
    deployments.push(
      { id: 'openai-gpt-5-mini', provider: 'openai', model: 'gpt-5-mini', image_model: 'gpt-image-1' },
      { id: 'openai-gpt-5', provider: 'openai', model: 'gpt-5', image_model: 'gpt-image-1' },
      { id: 'openai-text-embedding-3-small', provider: 'openai', model: 'text-embedding-3-small' },
    );
    models.push(
      { id: 'gloo-openai-gpt-5-mini', family: 'openai', context_window: 400_000, max_output_tokens: 128_000, capabilities: openai, pricing: { input_per_1m: 0.25, output_per_1m: 2, per_image: 0.04, ...OPENAI_CACHE(0.25) }, deployments: ['openai-gpt-5-mini'] },
      { id: 'gloo-openai-gpt-5', family: 'openai', context_window: 400_000, max_output_tokens: 128_000, capabilities: openai, pricing: { input_per_1m: 1.25, output_per_1m: 10, per_image: 0.04, ...OPENAI_CACHE(1.25) }, deployments: ['openai-gpt-5'] },
      { id: 'gloo-openai-text-embedding-3-small', family: 'openai', type: 'embedding', context_window: 8_191, dimensions: 1_536, shortenable: true, pricing: { input_per_1m: 0.02, output_per_1m: 0 }, deployments: ['openai-text-embedding-3-small'] },
    );
    tiers.tier_1.push('gloo-openai-gpt-5-mini');
    tiers.tier_2.push('gloo-openai-gpt-5-mini');
    tiers.tier_3.push('gloo-openai-gpt-5');
    families.openai = ['gloo-openai-gpt-5-mini', 'gloo-openai-gpt-5'];
  }
  if (env.ANTHROPIC_API_KEY) {
    providers.push({ id: 'anthropic', type: 'anthropic', base_url: env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com', api_key_env: 'ANTHROPIC_API_KEY' });
    deployments.push(
      { id: 'anthropic-claude-haiku-4.5', provider: 'anthropic', model: 'claude-haiku-4-5' },
      { id: 'anthropic-claude-sonnet-4.5', provider: 'anthropic', model: 'claude-sonnet-4-5' },
    );
    models.push(
      { id: 'gloo-anthropic-claude-haiku-4.5', family: 'anthropic', context_window: 200_000, max_output_tokens: 64_000, capabilities: vision, pricing: { input_per_1m: 1, output_per_1m: 5, cached_input_per_1m: 0.1, cache_write_per_1m: 1.25, cache_write_1h_per_1m: 2 }, deployments: ['anthropic-claude-haiku-4.5'] },
      { id: 'gloo-anthropic-claude-sonnet-4.5', family: 'anthropic', context_window: 200_000, max_output_tokens: 64_000, capabilities: vision, pricing: { input_per_1m: 3, output_per_1m: 15, cached_input_per_1m: 0.3, cache_write_per_1m: 3.75, cache_write_1h_per_1m: 6 }, deployments: ['anthropic-claude-sonnet-4.5'] },
    );
    tiers.tier_1.push('gloo-anthropic-claude-haiku-4.5');
    tiers.tier_2.push('gloo-anthropic-claude-sonnet-4.5');
    tiers.tier_3.push('gloo-anthropic-claude-sonnet-4.5');
    families.anthropic = ['gloo-anthropic-claude-haiku-4.5', 'gloo-anthropic-claude-sonnet-4.5'];
  }
  for (const tier of TIERS) tiers[tier].push('local-chat');
  return { providers, deployments, models, routing: { tiers, families } };
}
