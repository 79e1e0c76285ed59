// The built-in `local` provider: answers with no upstream configured. Chat comes from the
// deterministic rule-based responder (responder.ts), shaped here like any upstream's answer:
// prefix continuation, stop sequences, max tokens, usage and token-by-token streaming.
// Embeddings come from an Embedder (the server's: the real local model, in worker threads).
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ProviderError,
  type CallContext,
  type ChatRequest,
  type ChatResult,
  type ChatStreamEvent,
  type EmbedRequest,
  type EmbedResult,
  type FinishReason,
  type Provider,
} from '../types.js';
import { supportedDimensions, type Embedder } from './embedder.js';
import { drawPromptPng } from './image.js';
import { respond } from './responder.js';
import { estimateMessageTokens, estimateTokens, splitTokens } from './tokens.js';

export interface LocalProviderOptions {
  id?: string;
  embedder: Embedder;
  /** Pause between streamed tokens, for demos and benchmarks; none by default. */
  tokenDelayMs?: number;
}

export function createLocalProvider(options: LocalProviderOptions): Provider {
  const embedder = options.embedder;
  const delayMs = options.tokenDelayMs ?? 0;

  return {
    id: options.id ?? 'local',
    kind: 'local',

    async chat(request: ChatRequest, ctx: CallContext): Promise<ChatResult> {
      ctx.signal.throwIfAborted();
      return complete(request);
    },

    async *chatStream(request: ChatRequest, ctx: CallContext): AsyncIterable<ChatStreamEvent> {
      ctx.signal.throwIfAborted();
      const result = complete(request);
      const deltas: ChatStreamEvent[] = (result.toolCalls ?? []).flatMap((call, index) => [
        { type: 'delta', toolCalls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] },
        ...splitTokens(call.function.arguments).map((fragment): ChatStreamEvent => ({ type: 'delta', toolCalls: [{ index, function: { arguments: fragment } }] })),
      ]);
      deltas.push(...splitTokens(result.content ?? '').map((content): ChatStreamEvent => ({ type: 'delta', content })));
      for (const delta of deltas) {
        if (delayMs > 0) await sleep(delayMs, undefined, { signal: ctx.signal });
        ctx.signal.throwIfAborted();
        yield delta;
      }
      yield { type: 'finish', finishReason: result.finishReason, usage: result.usage };
    },

    async embed(request: EmbedRequest, ctx: CallContext): Promise<EmbedResult> {
      ctx.signal.throwIfAborted();
      if (request.dimensions !== undefined && !supportedDimensions(embedder, request.dimensions)) {
        throw new ProviderError('bad_request', `${embedder.model} supports 1 to ${embedder.nativeDimensions} dimensions, not ${request.dimensions}`);
      }
      let vectors: number[][];
      try {
        vectors = await embedder.embed(request.input, request.dimensions);
      } catch (error) {
        throw new ProviderError('unavailable', `local embedder ${embedder.model} failed: ${(error as Error).message}`, { cause: error });
      }
      return { vectors, promptTokens: request.input.reduce((sum, text) => sum + estimateTokens(text), 0) };
    },

    async generateImage(request, ctx) {
      ctx.signal.throwIfAborted();
      // Always a PNG, whatever format was asked for: the local drawing is a PNG.
      return { base64: drawPromptPng(request.prompt).toString('base64'), mediaType: 'image/png' };
    },

    async probe(): Promise<void> {},

    async close(): Promise<void> {
      await embedder.close?.();
    },
  };
}

/** The whole non-streamed answer; streaming replays it piece by piece. */
function complete(request: ChatRequest): ChatResult {
  const reply = respond(request);
  const prefix = request.assistantPrefix?.text ?? '';
  const promptTokens =
    estimateMessageTokens(request.messages) + (request.tools ? estimateTokens(JSON.stringify(request.tools)) : 0) + estimateTokens(prefix);

  if (reply.kind === 'tool_calls') {
    if (prefix) throw new ProviderError('prefix_refused', 'the local model answers this request with tool calls, which cannot continue a text prefix');
    const completionTokens = reply.calls.reduce((sum, call) => sum + estimateTokens(call.function.name) + estimateTokens(call.function.arguments), 0);
    return { content: null, toolCalls: reply.calls, finishReason: 'tool_calls', usage: { promptTokens, completionTokens } };
  }
  // Deterministic, so a prefix is one of our own answers cut short: continue it exactly.
  if (!reply.text.startsWith(prefix)) {
    throw new ProviderError('prefix_refused', 'the local model can only continue its own answer to this request');
  }
  const { text, finishReason } = limit(reply.text.slice(prefix.length), request.stop, request.maxTokens);
  return { content: text, finishReason, usage: { promptTokens, completionTokens: estimateTokens(text) } };
}

/** Cuts at the first stop sequence (excluded), then at `maxTokens` whole tokens. */
function limit(text: string, stop: string[] = [], maxTokens = Infinity): { text: string; finishReason: FinishReason } {
  const cut = Math.min(...stop.filter(Boolean).map((s) => text.indexOf(s)).filter((i) => i >= 0), text.length);
  let kept = '';
  let tokens = 0;
  for (const piece of splitTokens(text.slice(0, cut))) {
    tokens += estimateTokens(piece);
    if (tokens > maxTokens) return { text: kept, finishReason: 'length' };
    kept += piece;
  }
  return { text: kept, finishReason: 'stop' };
}
