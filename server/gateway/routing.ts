// Turns a request's routing selector into an ordered list of models to try, before any
// upstream call: exactly one of auto_routing, model, model_family (else 400), every
// candidate able to take the request (tools, images) and large enough for it (prompt
// estimate + max tokens within the context window, else 400). A model too small for the
// prompt gives its place to the first of its `context_window_fallbacks` that fits; the
// models' `fallbacks` that can take the request follow the plan's own models. A key with an
// allow-list (identity/model-access.ts) is planned only its allowed models, fallbacks
// included: a model it may not call is refused 403 (FORBIDDEN), and so is a family or an
// auto-routed request none of whose models it may call.
//
// Auto-routing rule (README "Auto-routing"): the request's features pick a tier.
//   tier_3  images, a reasoning hint (step by step, prove, derive, analyse, a code block)
//           or a prompt of 4,000 tokens or more;
//   tier_2  tools, a JSON-schema answer format, a prompt of 800 tokens or more, or more
//           than 8 messages;
//   tier_1  everything else.
// Confidence says how clearly the request sits in its tier (a hard signal such as an
// image is surer than a prompt just past a length threshold). The tier's models come
// first; the other tiers' models follow as fallbacks (the tier above first).
import { ApiError } from '../errors.js';
import type { ModelAccess } from '../identity/model-access.js';
import type { RequestTrace } from '../observability/tracing.js';
import { estimateMessageTokens } from '../providers/local/tokens.js';
import type { ChatRequest } from '../providers/types.js';
import type { Catalog, ModelConfig, ModelFamily, Tier } from './catalog.js';
import { MODEL_FAMILIES, TIERS } from './catalog.js';

export type RoutingMechanism = 'auto_routing' | 'model_family' | 'direct_model_selection';

export interface RouteSelector {
  auto_routing?: boolean;
  model?: string;
  model_family?: string;
}

export interface RequestFeatures {
  promptTokens: number;
  maxTokens: number | undefined;
  hasTools: boolean;
  hasImages: boolean;
  /** The Responses API's `image_generation` tool is offered. */
  imageGeneration?: boolean;
  jsonSchema: boolean;
  messageCount: number;
  /** The text of the user's messages, for reasoning hints. */
  userText: string;
}

export interface RoutePlan {
  mechanism: RoutingMechanism;
  tier: Tier | null;
  confidence: number | null;
  /** Candidate models, in the order they are tried. */
  models: ModelConfig[];
  /** The models' `fallbacks` that can take the request, tried one model at a time after `models`. */
  fallbacks: ModelConfig[];
  /** What the request needs of a model: the gateway picks a context-length or content-policy fallback by it. */
  features: RequestFeatures;
  /** The models the caller may call (null: all): refusal fallbacks are picked among them too. */
  access: ModelAccess | null;
  /** The catalog it was planned on: the request runs on it to the end, whatever a reload changes meanwhile. */
  catalog: Catalog;
}

const REASONING_HINT = /\b(step[- ]by[- ]step|prove|proof|derive|analy[sz]e|reason(ing)? through|think (it )?through|trade-?offs?)\b|`{3}/i;

/** What routing needs to know about a provider request. */
export function requestFeatures(request: Omit<ChatRequest, 'model'>, extra: { imageGeneration?: boolean } = {}): RequestFeatures {
  const users = request.messages.filter((m) => m.role === 'user');
  return {
    promptTokens: estimateMessageTokens(request.messages),
    maxTokens: request.maxTokens,
    hasTools: (request.tools?.length ?? 0) > 0 && request.toolChoice !== 'none',
    hasImages: request.messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url')),
    imageGeneration: extra.imageGeneration ?? false,
    jsonSchema: request.responseFormat?.type === 'json_schema',
    messageCount: request.messages.length,
    userText: users.map((m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join(' '))).join('\n'),
  };
}

export function classify(features: RequestFeatures): { tier: Tier; confidence: number } {
  const round = (n: number) => Math.round(n * 100) / 100;
  if (features.hasImages) return { tier: 'tier_3', confidence: 0.9 };
  if (REASONING_HINT.test(features.userText)) return { tier: 'tier_3', confidence: 0.75 };
  if (features.promptTokens >= 4_000) return { tier: 'tier_3', confidence: round(0.6 + 0.3 * Math.min(1, (features.promptTokens - 4_000) / 4_000)) };
  if (features.hasTools || features.jsonSchema) return { tier: 'tier_2', confidence: 0.85 };
  if (features.promptTokens >= 800 || features.messageCount > 8) return { tier: 'tier_2', confidence: 0.65 };
  return { tier: 'tier_1', confidence: round(0.95 - 0.35 * (features.promptTokens / 800)) };
}

export function planRoute(catalog: Catalog, selector: RouteSelector, features: RequestFeatures, access: ModelAccess | null = null): RoutePlan {
  const allowed = (m: ModelConfig) => access === null || access.allows(m);
  const chosen = [selector.auto_routing === true, selector.model !== undefined, selector.model_family !== undefined].filter(Boolean).length;
  if (chosen !== 1) {
    throw new ApiError('ROUTING_SELECTOR_INVALID', 'Exactly one of auto_routing (true), model or model_family must be set.', {
      param: selector.model_family !== undefined ? 'model_family' : selector.model !== undefined ? 'model' : 'auto_routing',
    });
  }
  if (selector.model !== undefined) {
    const model = catalog.models.get(selector.model);
    if (!model || model.type !== 'chat') {
      throw new ApiError('UNSUPPORTED_MODEL', `${selector.model} is not a chat model of the catalog (see GET /ai/v2/models).`, { param: 'model' });
    }
    if (model.deprecated) throw new ApiError('UNSUPPORTED_MODEL', `${model.id} is deprecated and no longer served.`, { param: 'model' });
    if (!allowed(model)) throw notAllowed(`model ${model.id}`, 'model');
    requireCapable(model, features, 'model');
    const usable = fitting(catalog, model, features, allowed);
    if (!usable) requireFits(model, features);
    return withFallbacks(catalog, { mechanism: 'direct_model_selection', tier: null, confidence: null, models: [usable!] }, features, access);
  }
  if (selector.model_family !== undefined) {
    const family = selector.model_family as ModelFamily;
    if (!MODEL_FAMILIES.includes(family)) throw new ApiError('UNSUPPORTED_MODEL', `Unknown model family ${selector.model_family}.`, { param: 'model_family' });
    const ids = catalog.families[family] ?? [...catalog.models.values()].filter((m) => m.family === family).map((m) => m.id);
    const served = ids.map((id) => catalog.models.get(id)!).filter((m) => m.type === 'chat' && !m.deprecated);
    if (served.length === 0) {
      throw new ApiError('UNSUPPORTED_MODEL', `No model of family ${family} is configured on this platform.`, { param: 'model_family' });
    }
    const configured = served.filter(allowed);
    if (configured.length === 0) throw notAllowed(`any model of family ${family}`, 'model_family');
    const capable = configured.filter((m) => isCapable(m, features));
    if (capable.length === 0) requireCapable(configured[0], features, 'model_family');
    const usable = unique(capable.map((m) => fitting(catalog, m, features, allowed)));
    if (usable.length === 0) requireFits(capable[0], features);
    return withFallbacks(catalog, { mechanism: 'model_family', tier: null, confidence: null, models: usable }, features, access);
  }
  const { tier, confidence } = classify(features);
  const index = TIERS.indexOf(tier);
  const order = [tier, ...TIERS.slice(index + 1), ...TIERS.slice(0, index).reverse()];
  const seen = new Set<string>();
  const candidates: (ModelConfig | undefined)[] = [];
  for (const t of order) {
    for (const id of catalog.tiers[t] ?? []) {
      const model = catalog.models.get(id)!;
      if (seen.has(id) || model.deprecated || !allowed(model)) continue;
      seen.add(id);
      if (isCapable(model, features)) candidates.push(fitting(catalog, model, features, allowed));
    }
  }
  const models = unique(candidates);
  if (seen.size === 0) throw notAllowed('any model auto-routing chooses from', 'auto_routing');
  if (models.length === 0) {
    const any = [...seen].map((id) => catalog.models.get(id)!);
    const capableAny = any.filter((m) => isCapable(m, features));
    if (capableAny.length === 0) throw new ApiError('UNSUPPORTED_MODEL', `No configured model can take this request (${missingCapability(features)}).`, { param: 'messages' });
    requireFits(capableAny.reduce((a, b) => (a.context_window >= b.context_window ? a : b)), features);
  }
  return withFallbacks(catalog, { mechanism: 'auto_routing', tier, confidence, models }, features, access);
}

/** 403 for a model (or models) the caller's key may not call. */
export function notAllowed(what: string, param: string): ApiError {
  return new ApiError('FORBIDDEN', `This API key may not use ${what} (see the key's allowed models).`, { gatewayCode: 'model_not_allowed', param });
}

/** The model itself when the request fits it, else the first of its (allowed) context-window fallbacks that can take the request. */
function fitting(catalog: Catalog, model: ModelConfig, features: RequestFeatures, allowed: (m: ModelConfig) => boolean): ModelConfig | undefined {
  if (fits(model, features)) return model;
  return catalog.fallbacks.get(model.id)!.context_window_fallbacks.find((m) => !m.deprecated && allowed(m) && isCapable(m, features) && fits(m, features));
}

/** Each model once, in order; the gaps of models nothing could replace dropped. */
function unique(models: (ModelConfig | undefined)[]): ModelConfig[] {
  return [...new Set(models.filter((m) => m !== undefined))];
}

function withFallbacks(catalog: Catalog, plan: Omit<RoutePlan, 'fallbacks' | 'features' | 'access' | 'catalog'>, features: RequestFeatures, access: ModelAccess | null): RoutePlan {
  const fallbacks: ModelConfig[] = [];
  for (const model of plan.models) {
    for (const m of catalog.fallbacks.get(model.id)!.fallbacks) {
      if (!m.deprecated && (access === null || access.allows(m)) && !plan.models.includes(m) && !fallbacks.includes(m) && isCapable(m, features) && fits(m, features)) {
        fallbacks.push(m);
      }
    }
  }
  return { ...plan, fallbacks, features, access, catalog };
}

/** The fallbacks of `model` for a refusal of its upstream (context length, content filter) that can take the request and the caller may call. */
export function refusalFallbacks(catalog: Catalog, model: ModelConfig, kind: 'context_length' | 'content_filter', plan: Pick<RoutePlan, 'features' | 'access'>): ModelConfig[] {
  const { features, access } = plan;
  const usable = (m: ModelConfig) => !m.deprecated && (access === null || access.allows(m)) && isCapable(m, features);
  const chains = catalog.fallbacks.get(model.id)!;
  // After the upstream's own context-length refusal the estimate is known to be short: the fallback's window decides upstream.
  if (kind === 'context_length') return chains.context_window_fallbacks.filter(usable);
  return chains.content_policy_fallbacks.filter((m) => usable(m) && fits(m, features));
}

function isCapable(model: ModelConfig, features: RequestFeatures): boolean {
  return (
    (!features.hasImages || model.capabilities.vision) &&
    (!features.hasTools || model.capabilities.tools) &&
    (!features.imageGeneration || model.capabilities.image_generation)
  );
}

function missingCapability(features: RequestFeatures): string {
  if (features.hasImages) return 'image input';
  return features.imageGeneration ? 'image generation' : 'tools';
}

function requireCapable(model: ModelConfig, features: RequestFeatures, param: string): void {
  if (features.hasImages && !model.capabilities.vision) throw new ApiError('UNSUPPORTED_MODEL', `${model.id} does not accept image input.`, { param });
  if (features.hasTools && !model.capabilities.tools) throw new ApiError('UNSUPPORTED_MODEL', `${model.id} does not support tools.`, { param });
  if (features.imageGeneration && !model.capabilities.image_generation) {
    throw new ApiError('UNSUPPORTED_MODEL', `${model.id} does not support the image_generation tool.`, { param });
  }
}

function fits(model: ModelConfig, features: RequestFeatures): boolean {
  const maxOut = model.max_output_tokens ?? Infinity;
  return (features.maxTokens ?? 0) <= maxOut && features.promptTokens + (features.maxTokens ?? 1) <= model.context_window;
}

function requireFits(model: ModelConfig, features: RequestFeatures): void {
  if (features.maxTokens !== undefined && model.max_output_tokens !== null && features.maxTokens > model.max_output_tokens) {
    throw new ApiError('CONTEXT_WINDOW_EXCEEDED', `max_tokens ${features.maxTokens} exceeds the ${model.max_output_tokens} output tokens of ${model.id}.`, { param: 'max_tokens' });
  }
  if (!fits(model, features)) {
    throw new ApiError(
      'CONTEXT_WINDOW_EXCEEDED',
      `The prompt (about ${features.promptTokens} tokens) plus max_tokens (${features.maxTokens ?? 0}) exceed the ${model.context_window}-token context window of ${model.id}.`,
      { param: 'messages' },
    );
  }
}

/** `plan` as a span of the request's trace: the selector asked for, then the mechanism and models planned (or the refusal). */
export function tracedRoute(trace: RequestTrace | null | undefined, selector: RouteSelector, plan: () => RoutePlan): RoutePlan {
  if (!trace) return plan();
  const span = trace.span('gateway.route', {
    'gen_ai.request.model': selector.model,
    'gateway.model_family': selector.model_family,
    'gateway.auto_routing': selector.auto_routing,
  });
  try {
    const planned = plan();
    span.set({ 'gateway.mechanism': planned.mechanism, 'gateway.tier': planned.tier ?? undefined, 'gateway.models': [...planned.models, ...planned.fallbacks].map((m) => m.id).join(',') });
    span.end();
    return planned;
  } catch (error) {
    span.fail(error);
    throw error;
  }
}
