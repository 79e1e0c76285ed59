// Prices and periods. Money is integer micro-dollars; the catalog prices per 1M tokens, so
// a token costs `price_per_1m` micro-dollars exactly: cost = tokens × price (rounded up),
// plus `per_image` dollars for each image a model drew.
import { FALLBACK_KINDS, type Catalog, type ModelConfig } from '../gateway/catalog.js';
import type { Usage as TokenUsage } from '../providers/types.js';

export type { TokenUsage };

/** Output tokens assumed by an admission estimate when the request sets no max_tokens. */
export const DEFAULT_ESTIMATE_OUTPUT_TOKENS = 4096;

/**
 * What a call costs: its tokens, and the images it drew (`per_image` is in USD, so one image
 * costs per_image × 1M micro-dollars). Prompt tokens read from the upstream's prompt cache
 * are priced as cached input, those written to it as cache writes, the rest as input.
 */
export function costMicros(model: Pick<ModelConfig, 'pricing'> | undefined, usage: TokenUsage & { images?: number }): bigint {
  if (!model) return 0n;
  const p = model.pricing;
  const { cachedTokens = 0, cacheWriteTokens = 0, cacheWrite1hTokens = 0 } = usage;
  const input =
    (usage.promptTokens - cachedTokens - cacheWriteTokens) * p.input_per_1m +
    cachedTokens * p.cached_input_per_1m +
    (cacheWriteTokens - cacheWrite1hTokens) * p.cache_write_per_1m +
    cacheWrite1hTokens * p.cache_write_1h_per_1m;
  const micros = input + usage.completionTokens * p.output_per_1m + (usage.images ?? 0) * p.per_image * 1_000_000;
  // A float product such as 3 × 0.1 must not round 0.30000000000000004 up to 1.
  return BigInt(Math.ceil(micros - 1e-6));
}

/**
 * The week a spending cap counts: ISO week, from Monday 00:00 UTC to the next Monday
 * 00:00 UTC. A charge settled after the boundary counts in the new week.
 */
export function weekStart(now: Date = new Date()): Date {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return day;
}

export function nextWeekStart(now: Date = new Date()): Date {
  const start = weekStart(now);
  start.setUTCDate(start.getUTCDate() + 7);
  return start;
}

/** Coding-agent allowances renew per calendar month (UTC) or per ISO week. */
export type PlanPeriod = 'month' | 'week';

export function periodStart(period: PlanPeriod, now: Date = new Date()): Date {
  return period === 'week' ? weekStart(now) : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/**
 * The model an admission estimate prices: the request's `model` when it names one of the
 * catalog; else (auto_routing, model_family, or a model the catalog lacks, which the
 * handler refuses anyway) the most expensive candidate: the family's chat models, or
 * every chat model for auto-routing. A request may end on a fallback of its model, priced
 * its own way: the most expensive of the candidates' fallbacks counts too. Erring high
 * only holds more credit for the request.
 */
export function estimateModel(catalog: Catalog, selector: { model?: unknown; model_family?: unknown }, kind: 'chat' | 'embedding'): ModelConfig | undefined {
  const named = typeof selector.model === 'string' ? catalog.models.get(selector.model) : undefined;
  let candidates = [...catalog.models.values()].filter((m) => m.type === kind && !m.deprecated);
  if (named) candidates = [named];
  else if (typeof selector.model_family === 'string') {
    const family = candidates.filter((m) => m.family === selector.model_family);
    if (family.length > 0) candidates = family;
  }
  let best: ModelConfig | undefined;
  for (const candidate of candidates) {
    const chains = catalog.fallbacks.get(candidate.id);
    for (const m of [candidate, ...FALLBACK_KINDS.flatMap((k) => chains?.[k] ?? [])]) {
      if (!best || m.pricing.input_per_1m + m.pricing.output_per_1m > best.pricing.input_per_1m + best.pricing.output_per_1m) best = m;
    }
  }
  return best;
}

export function estimateOutputTokens(model: ModelConfig | undefined, maxTokens: number | undefined): number {
  if (maxTokens !== undefined) return maxTokens;
  return Math.min(model?.max_output_tokens ?? DEFAULT_ESTIMATE_OUTPUT_TOKENS, DEFAULT_ESTIMATE_OUTPUT_TOKENS);
}
