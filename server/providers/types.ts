// The narrow interface every upstream adapter implements (OpenAI-compatible, Anthropic,
// local). The gateway speaks OpenAI's chat shape internally; an adapter translates it to
// its upstream's wire format and back, and classifies every failure as a ProviderError.
// Routing, failover, health and billing live outside the adapters (server/gateway/).

export type Role = 'system' | 'user' | 'assistant' | 'tool';

/**
 * A prompt-cache breakpoint (Anthropic's): the prompt up to and including the part (or the
 * message's last part) is cached for `ttl` (default 5 minutes). Sent to Anthropic only;
 * OpenAI caches repeated prefixes by itself (`promptCacheKey` helps it route them).
 */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export interface TextPart {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
}
export interface ImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
  cache_control?: CacheControl;
}
export type ContentPart = TextPart | ImagePart;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One conversation message, OpenAI shape. `developer` messages arrive here as `system`. */
export interface ChatMessage {
  role: Role;
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** A prompt-cache breakpoint on the message's last part. */
  cache_control?: CacheControl;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null; description?: string } };

export interface ChatRequest {
  /** The upstream's own model name (the deployment's), not the catalog id. */
  model: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  /** Reasoning models only (the gateway drops it for others): how much the model reasons. */
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high';
  user?: string;
  /** OpenAI's `prompt_cache_key`: requests sharing a long prefix and this key reach the same cache. */
  promptCacheKey?: string;
  /**
   * Resume a broken stream: the answer so far, and how this upstream is asked to continue
   * it. The text the adapter returns is only the continuation. An adapter whose upstream
   * cannot continue a prefix (mode `none`) or refuses it throws ProviderError('prefix_refused').
   */
  assistantPrefix?: { text: string; mode: PrefixMode };
}

/**
 * How an upstream continues a trailing assistant message:
 * - `none`: it cannot (OpenAI answers such a conversation with a fresh reply): the gateway
 *   asks it for the rest in a user turn instead (gateway/continuation.ts);
 * - `native`: a plain trailing assistant message is continued (Anthropic, `local`);
 * - `vllm`: with `continue_final_message: true` and `add_generation_prompt: false`;
 * - `mistral`: with `prefix: true` on the message (Mistral, DeepSeek).
 */
export const PREFIX_MODES = ['none', 'native', 'vllm', 'mistral'] as const;
export type PrefixMode = (typeof PREFIX_MODES)[number];

export interface Usage {
  /** Every input token, those read from or written to a prompt cache included. */
  promptTokens: number;
  completionTokens: number;
  /** Of the completion tokens, those a reasoning model spent reasoning (when the upstream says). */
  reasoningTokens?: number;
  /** Of the prompt tokens, those read from the upstream's prompt cache (priced as cached input). */
  cachedTokens?: number;
  /** Of the prompt tokens, those written to the prompt cache (Anthropic; priced as cache writes). */
  cacheWriteTokens?: number;
  /** Of the cache writes, those kept for an hour (`ttl: '1h'`, priced higher than the 5-minute ones). */
  cacheWrite1hTokens?: number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface ChatResult {
  content: string | null;
  refusal?: string | null;
  toolCalls?: ToolCall[];
  finishReason: FinishReason;
  /** Absent when the upstream did not report it. */
  usage?: Usage;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/**
 * What a chat stream yields. A stream that ends without a `finish` event, or is cut,
 * stalls or turns malformed, throws a ProviderError instead: adapters never present a
 * broken upstream stream as a normal end.
 */
export type ChatStreamEvent =
  | { type: 'delta'; content?: string; refusal?: string; toolCalls?: ToolCallDelta[] }
  | { type: 'finish'; finishReason: FinishReason; usage?: Usage };

export interface EmbedRequest {
  model: string;
  input: string[];
  dimensions?: number;
}

export interface EmbedResult {
  vectors: number[][];
  /** Absent when the upstream did not report it. */
  promptTokens?: number;
}

/** Image generation (the Responses API's `image_generation` tool). */
export interface ImageRequest {
  /** The upstream's image model name. */
  model: string;
  prompt: string;
  size?: string;
  quality?: string;
  outputFormat?: 'png' | 'jpeg' | 'webp';
}

export interface ImageResult {
  /** The image, base64-encoded. */
  base64: string;
  mediaType: string;
}

export interface CallTimeouts {
  /** Until the upstream accepts the connection and answers with headers. */
  connectMs: number;
  /** Until the first token (or, without streaming, the whole answer) arrives. */
  firstTokenMs: number;
  /** Longest silence between two stream chunks once streaming. */
  idleMs: number;
}

export interface CallContext {
  /** Aborted when the client leaves or the gateway gives up: cancel the upstream call. */
  signal: AbortSignal;
  timeouts: CallTimeouts;
}

export type ProviderKind = 'openai' | 'anthropic' | 'local';

/** One configured upstream endpoint (base URL + credential), shared by its deployments. */
export interface Provider {
  readonly id: string;
  readonly kind: ProviderKind;
  chat(request: ChatRequest, ctx: CallContext): Promise<ChatResult>;
  chatStream(request: ChatRequest, ctx: CallContext): AsyncIterable<ChatStreamEvent>;
  embed(request: EmbedRequest, ctx: CallContext): Promise<EmbedResult>;
  /** Upstreams that draw images (absent: the provider cannot). */
  generateImage?(request: ImageRequest, ctx: CallContext): Promise<ImageResult>;
  /** Cheap liveness check for background probes; rejects with a ProviderError. */
  probe(ctx: CallContext): Promise<void>;
  /** Releases pooled connections. */
  close(): Promise<void>;
}

/**
 * Every way an upstream call can fail, as the gateway needs to tell them apart:
 * - failover-worthy: timeout, rate_limit, server, unavailable, connection_dropped,
 *   malformed_stream, empty_stream, prefix_refused;
 * - never retried on another deployment (the request itself cannot succeed):
 *   bad_request, auth, context_length, content_filter.
 */
export type ProviderErrorKind =
  | 'timeout'
  | 'rate_limit'
  | 'server'
  | 'unavailable'
  | 'connection_dropped'
  | 'malformed_stream'
  | 'empty_stream'
  | 'prefix_refused'
  | 'bad_request'
  | 'auth'
  | 'context_length'
  | 'content_filter';

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly details: {
      /** Upstream HTTP status, when there was one. */
      status?: number;
      /** Upstream Retry-After, in ms. */
      retryAfterMs?: number;
      /** Which timeout fired. */
      timeout?: 'connect' | 'first_token' | 'idle';
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: details.cause });
    this.name = 'ProviderError';
  }
}
