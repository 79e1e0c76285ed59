// The response cache of chat completions. A model opts in in the gateway config (`cache:
// {ttl_ms, scope}`); a request is then answered from the cache when an earlier one was the
// same: the same normalised provider request (roles, stop and max_tokens as the gateway
// reads them, key order ignored), route, answer shape (guarded or direct, streamed, with
// usage), organization and, unless the model shares answers organization-wide, API key.
// What is cached: deterministic requests (temperature 0) by default; a sampled one only when
// the caller opts in (`X-Response-Cache: on`: every such caller then gets the same sample);
// `off` bypasses the cache, `refresh` skips the lookup and stores the new answer. Never
// cached: errors, a stream that broke or that its client left, a content-filtered answer, and
// an answer larger than `response_cache.max_entry_bytes`. A hit makes no upstream call, so
// nothing is metered or billed for it; hits and misses are counted per model.
import { createHash } from 'node:crypto';
import { Counter } from 'prom-client';
import { stringify } from 'safe-stable-stringify';
import type { components } from '../../../generated/types/openapi.js';
import type { Metrics } from '../../observability/metrics.js';
import type { ChatRequest } from '../../providers/types.js';
import type { RoutePlan } from '../routing.js';
import type { AnswerStore } from './answer-store.js';

type ChatCompletion = components['schemas']['ChatCompletion'];
type ChatCompletionChunk = components['schemas']['ChatCompletionChunk'];

export const CACHE_MODES = ['on', 'off', 'refresh'] as const;
export type CacheMode = (typeof CACHE_MODES)[number];

/** What a request brings to the cache: whose it is, and its `X-Response-Cache` header. */
export interface CacheRequest {
  organizationId: string;
  /** The API key (or OAuth client) that called. */
  credentialId: string;
  mode: CacheMode | undefined;
}

/** What else makes two requests the same answer, besides their provider request. */
export interface AnswerShape {
  guarded: boolean;
  stream: boolean;
  includeUsage: boolean;
}

type Kept = { kind: 'json'; body: ChatCompletion } | { kind: 'stream'; chunks: ChatCompletionChunk[] };

/** A kept answer replayed under this request's id and time. */
export type Replay = { kind: 'json'; body: ChatCompletion } | { kind: 'stream'; stream: AsyncIterable<ChatCompletionChunk> };

/** What a chunk holds beyond its text, for a running estimate of a recorded stream's size. */
const CHUNK_OVERHEAD_BYTES = 160;

export class ResponseCache {
  readonly lookups: Counter<'model' | 'result'>;
  readonly stores: Counter<'model'>;

  constructor(
    readonly store: AnswerStore,
    metrics: Metrics,
    readonly maxEntryBytes: number,
  ) {
    this.lookups = new Counter({
      name: 'gateway_response_cache_lookups_total',
      help: 'Response cache lookups by model (the first of the route) and result: hit (answered without an upstream call) or miss.',
      labelNames: ['model', 'result'] as const,
      registers: [metrics.registry],
    });
    this.stores = new Counter({ name: 'gateway_response_cache_stores_total', help: 'Answers kept by the response cache, by model.', labelNames: ['model'] as const, registers: [metrics.registry] });
  }

  /**
   * The request's place in the cache, or null when it is not cached: no cache request (an
   * operation that does not offer it), `off`, a model of its route without `cache` in the
   * config, or a sampled request (temperature absent or above 0) without `on` or `refresh`.
   */
  slot(cache: CacheRequest | undefined, plan: RoutePlan, request: Omit<ChatRequest, 'model'>, shape: AnswerShape): CacheSlot | null {
    if (cache === undefined || cache.mode === 'off' || (cache.mode === undefined && request.temperature !== 0)) return null;
    let ttlMs = Infinity;
    let shared = true;
    for (const model of plan.models) {
      if (!model.cache) return null;
      ttlMs = Math.min(ttlMs, model.cache.ttl_ms);
      shared &&= model.cache.scope === 'organization';
    }
    const facts = {
      organization: cache.organizationId,
      credential: shared ? null : cache.credentialId,
      mechanism: plan.mechanism,
      models: plan.models.map((m) => m.id),
      shape,
      request,
    };
    const key = createHash('sha256').update(stringify(facts)).digest('base64url');
    return new CacheSlot(this, key, ttlMs, plan.models[0].id, cache.mode === 'refresh');
  }
}

export class CacheSlot {
  constructor(
    private readonly cache: ResponseCache,
    private readonly key: string,
    private readonly ttlMs: number,
    private readonly model: string,
    private readonly refresh: boolean,
  ) {}

  /** The kept answer, as this request's (its id and time), or undefined: a miss. */
  async lookup(id: string, created: number): Promise<Replay | undefined> {
    const text = this.refresh ? undefined : await this.cache.store.get(this.key);
    this.cache.lookups.inc({ model: this.model, result: text === undefined ? 'miss' : 'hit' });
    if (text === undefined) return undefined;
    const kept = JSON.parse(text) as Kept;
    if (kept.kind === 'json') return { kind: 'json', body: { ...kept.body, id, created } };
    return { kind: 'stream', stream: replay(kept.chunks, id, created) };
  }

  /** Keeps a whole answer, unless it was content-filtered. */
  keepJson(body: ChatCompletion): void {
    if (body.choices.some((c) => c.finish_reason === 'content_filter')) return;
    this.keep({ kind: 'json', body });
  }

  /** The stream as it is sent, kept once it has ended whole (not broken, not left, not filtered). */
  record(stream: AsyncIterable<ChatCompletionChunk>): AsyncIterable<ChatCompletionChunk> {
    return recorded(stream, this.cache.maxEntryBytes, (chunks) => this.keep({ kind: 'stream', chunks }));
  }

  private keep(answer: Kept): void {
    const text = JSON.stringify(answer);
    if (text.length > this.cache.maxEntryBytes) return;
    this.cache.stores.inc({ model: this.model });
    // The stores never reject: Redis's falls back to not keeping it.
    void this.cache.store.set(this.key, text, this.ttlMs);
  }
}

async function* replay(chunks: ChatCompletionChunk[], id: string, created: number): AsyncIterable<ChatCompletionChunk> {
  for (const chunk of chunks) yield { ...chunk, id, created };
}

/**
 * Passes the chunks on and collects them; `keep` gets them only when the stream ended whole,
 * with a finish reason other than content_filter: an error never reaches the end, and a
 * stream whose client left ends without a finish chunk (or closes this generator at its
 * `yield`). A stream that outgrows `maxBytes` stops being collected.
 */
async function* recorded(stream: AsyncIterable<ChatCompletionChunk>, maxBytes: number, keep: (chunks: ChatCompletionChunk[]) => void): AsyncIterable<ChatCompletionChunk> {
  let chunks: ChatCompletionChunk[] | null = [];
  let bytes = 0;
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    if (chunks) {
      const choice = chunk.choices[0];
      bytes += CHUNK_OVERHEAD_BYTES + (choice?.delta.content?.length ?? 0) + (choice?.delta.refusal?.length ?? 0) + (choice?.delta.tool_calls ? JSON.stringify(choice.delta.tool_calls).length : 0);
      finish = choice?.finish_reason ?? finish;
      if (bytes > maxBytes) chunks = null;
      else chunks.push(chunk);
    }
    yield chunk;
  }
  if (chunks && finish && finish !== 'content_filter') keep(chunks);
}
