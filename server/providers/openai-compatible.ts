// Adapter for every OpenAI-compatible upstream: OpenAI, Azure deployments, vLLM, Ollama,
// Together, Groq, Gemini's compatible endpoint, OpenRouter. They differ only by base URL,
// auth header and whether `usage` is reported, so one adapter serves them all.
import { hasCacheControl, withoutCacheControl } from './cache-control.js';
import { createHttpClient, streamError, type JsonCall } from './http-client.js';
import { cannotContinue, prefixRefused } from './prefix.js';
import { Redactor } from './redact.js';
import { openOnFirstPull, readSse, type SseTranslator } from './sse-reader.js';
import {
  ProviderError,
  type CallContext,
  type ChatRequest,
  type ChatResult,
  type EmbedRequest,
  type EmbedResult,
  type FinishReason,
  type Provider,
  type ToolCall,
  type ToolCallDelta,
  type Usage,
} from './types.js';

export interface OpenAICompatibleOptions {
  id: string;
  /** Up to and including the version segment the upstream needs, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Azure-style deployments: the model names the deployment, the key goes in `api-key`. */
  azure?: { apiVersion: string };
}

interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

interface WireCompletion {
  choices?: {
    message?: { content?: string | null; refusal?: string | null; tool_calls?: ToolCall[] };
    finish_reason?: string | null;
  }[];
  usage?: WireUsage | null;
}

interface WireChunk {
  choices?: {
    delta?: { content?: string | null; refusal?: string | null; tool_calls?: ToolCallDelta[] };
    finish_reason?: string | null;
  }[];
  usage?: WireUsage | null;
  error?: unknown;
}

export function createOpenAICompatibleProvider(options: OpenAICompatibleOptions): Provider {
  const http = createHttpClient(options.baseUrl, new Redactor([options.apiKey]));
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) {
    if (options.azure) headers['api-key'] = options.apiKey;
    else headers.authorization = `Bearer ${options.apiKey}`;
  }

  const path = (operation: string, model?: string): string =>
    options.azure
      ? `/openai${model ? `/deployments/${encodeURIComponent(model)}` : ''}/${operation}?api-version=${encodeURIComponent(options.azure.apiVersion)}`
      : `/${operation}`;

  const chatCall = (request: ChatRequest, stream: boolean): JsonCall => ({
    method: 'POST',
    path: path('chat/completions', request.model),
    headers,
    body: chatBody(request, stream),
  });

  return {
    id: options.id,
    kind: 'openai',

    async chat(request, ctx) {
      const answer = await http
        .json<WireCompletion>(chatCall(request, false), ctx, { ms: ctx.timeouts.firstTokenMs, kind: 'first_token' })
        .catch((err: unknown) => {
          throw prefixRefused(err, request);
        });
      return chatResult(answer);
    },

    chatStream(request, ctx) {
      return openOnFirstPull(async () => {
        const upstream = await http.stream(chatCall(request, true), ctx).catch((err: unknown) => {
          throw prefixRefused(err, request);
        });
        return readSse(upstream, chatTranslator(http.redact), 'upstream stream closed before [DONE]');
      });
    },

    async embed(request: EmbedRequest, ctx: CallContext): Promise<EmbedResult> {
      const body = { model: request.model, input: request.input, dimensions: request.dimensions, encoding_format: 'float' };
      const answer = await http.json<{ data?: { index: number; embedding: number[] }[]; usage?: WireUsage }>(
        { method: 'POST', path: path('embeddings', request.model), headers, body },
        ctx,
        { ms: ctx.timeouts.firstTokenMs, kind: 'first_token' },
      );
      if (!Array.isArray(answer.data) || answer.data.length !== request.input.length) {
        throw new ProviderError('server', 'upstream embeddings answer does not match the input');
      }
      const vectors = [...answer.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
      return { vectors, ...(answer.usage?.prompt_tokens !== undefined ? { promptTokens: answer.usage.prompt_tokens } : {}) };
    },

    async generateImage(request, ctx) {
      const body = { model: request.model, prompt: request.prompt, n: 1, size: request.size, quality: request.quality, output_format: request.outputFormat };
      const answer = await http.json<{ data?: { b64_json?: string }[] }>(
        { method: 'POST', path: path('images/generations', request.model), headers, body },
        ctx,
        { ms: ctx.timeouts.firstTokenMs, kind: 'first_token' },
      );
      const base64 = answer.data?.[0]?.b64_json;
      if (!base64) throw new ProviderError('server', 'upstream image answer has no b64_json');
      return { base64, mediaType: `image/${request.outputFormat ?? 'png'}` };
    },

    async probe(ctx) {
      await http.json({ method: 'GET', path: path('models'), headers }, ctx, { ms: ctx.timeouts.connectMs, kind: 'connect' });
    },

    close: () => http.close(),
  };
}

function chatBody(request: ChatRequest, stream: boolean): Record<string, unknown> {
  const prefix = request.assistantPrefix;
  // Breakpoints are Anthropic's: OpenAI refuses unknown message fields.
  let messages: unknown[] = request.messages.some(hasCacheControl) ? request.messages.map(withoutCacheControl) : request.messages;
  if (prefix) {
    // A plain trailing assistant message gets a fresh reply from OpenAI: each upstream has its own flag.
    if (prefix.mode === 'none') throw cannotContinue();
    messages = [...messages, { role: 'assistant', content: prefix.text, ...(prefix.mode === 'mistral' ? { prefix: true } : {}) }];
  }
  const vllm = prefix?.mode === 'vllm';
  // Undefined fields vanish in JSON.stringify, so optional parameters are only sent when set.
  return {
    model: request.model,
    messages,
    max_tokens: request.maxTokens,
    temperature: request.temperature,
    top_p: request.topP,
    stop: request.stop,
    tools: request.tools,
    tool_choice: request.toolChoice,
    parallel_tool_calls: request.parallelToolCalls,
    response_format: request.responseFormat,
    reasoning_effort: request.reasoningEffort,
    user: request.user,
    prompt_cache_key: request.promptCacheKey,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    ...(vllm ? { continue_final_message: true, add_generation_prompt: false } : {}),
  };
}

function chatResult(answer: WireCompletion): ChatResult {
  const choice = answer.choices?.[0];
  if (!choice?.message) throw new ProviderError('server', 'upstream answer has no choices');
  const { content = null, refusal, tool_calls } = choice.message;
  return {
    content,
    ...(refusal ? { refusal } : {}),
    ...(tool_calls?.length ? { toolCalls: tool_calls } : {}),
    finishReason: finishReason(choice.finish_reason),
    // Some compatible upstreams omit usage: the gateway then estimates it.
    ...(answer.usage ? { usage: usage(answer.usage) } : {}),
  };
}

function finishReason(reason: string | null | undefined): FinishReason {
  if (reason === 'length' || reason === 'tool_calls' || reason === 'content_filter') return reason;
  return reason === 'function_call' ? 'tool_calls' : 'stop';
}

function usage(wire: WireUsage | null | undefined): Usage | undefined {
  if (!wire) return undefined;
  const reasoning = wire.completion_tokens_details?.reasoning_tokens;
  const cached = wire.prompt_tokens_details?.cached_tokens;
  return {
    promptTokens: wire.prompt_tokens ?? 0,
    completionTokens: wire.completion_tokens ?? 0,
    ...(reasoning ? { reasoningTokens: reasoning } : {}),
    ...(cached ? { cachedTokens: cached } : {}),
  };
}

/** One stream's chunks as chat events; `[DONE]` ends it with the finish reason and usage. */
function chatTranslator(redact: Redactor): SseTranslator {
  let finish: string | undefined;
  let finalUsage: Usage | undefined;
  let sawOutput = false;
  return ({ data }, progress) => {
    if (data === '[DONE]') {
      if (!sawOutput && finish === undefined) throw new ProviderError('empty_stream', 'upstream stream ended without any output');
      // The usage chunk follows the finish_reason chunk, so `finish` waits for [DONE].
      return { type: 'finish', finishReason: finishReason(finish), ...(finalUsage ? { usage: finalUsage } : {}) };
    }
    const chunk = parseChunk(data, redact);
    if (chunk.usage) {
      finalUsage = usage(chunk.usage);
      progress();
    }
    const choice = chunk.choices?.[0];
    if (!choice) return undefined;
    if (choice.finish_reason) {
      finish = choice.finish_reason;
      progress();
    }
    const { content, refusal, tool_calls } = choice.delta ?? {};
    // A role-only opening chunk (vLLM sends one at once) is not a token.
    if (!content && !refusal && !tool_calls?.length) return undefined;
    sawOutput = true;
    progress();
    return {
      type: 'delta',
      ...(content ? { content } : {}),
      ...(refusal ? { refusal } : {}),
      ...(tool_calls?.length ? { toolCalls: tool_calls } : {}),
    };
  };
}

function parseChunk(data: string, redact: Redactor): WireChunk {
  let chunk: WireChunk;
  try {
    chunk = JSON.parse(data) as WireChunk;
  } catch (err) {
    throw new ProviderError('malformed_stream', 'upstream sent a chunk that is not JSON', { cause: err });
  }
  if (typeof chunk !== 'object' || chunk === null) throw new ProviderError('malformed_stream', 'upstream sent a non-object chunk');
  if (chunk.error !== undefined) throw streamError(chunk.error, redact);
  if (!Array.isArray(chunk.choices)) throw new ProviderError('malformed_stream', 'upstream chunk has no choices');
  return chunk;
}
