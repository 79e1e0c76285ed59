// Adapter for Anthropic's Messages API: translates the gateway's OpenAI-shaped chat to
// `POST /v1/messages` and the answer (plain or streamed) back.
import { hasCacheControl } from './cache-control.js';
import { createHttpClient, streamError, type JsonCall } from './http-client.js';
import { cannotContinue, prefixRefused, TrimmedPrefix } from './prefix.js';
import { Redactor } from './redact.js';
import { openOnFirstPull, readSse, type SseTranslator } from './sse-reader.js';
import {
  ProviderError,
  type CacheControl,
  type ChatMessage,
  type ChatRequest,
  type ChatResult,
  type ContentPart,
  type FinishReason,
  type Provider,
  type ResponseFormat,
  type ToolCall,
  type ToolChoice,
  type Usage,
} from './types.js';

export interface AnthropicOptions {
  id: string;
  /** Without the `/v1` segment, e.g. `https://api.anthropic.com`. */
  baseUrl: string;
  apiKey?: string;
  version?: string;
}

type Block = (
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string }
) & { cache_control?: CacheControl };

interface WireMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

interface WireUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** The cache writes by TTL. */
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
}

interface WireAnswer {
  content?: ({ type: string; text?: string; id?: string; name?: string; input?: unknown })[];
  stop_reason?: string | null;
  usage?: WireUsage;
}

const DEFAULT_MAX_TOKENS = 4096;

export function createAnthropicProvider(options: AnthropicOptions): Provider {
  const http = createHttpClient(options.baseUrl, new Redactor([options.apiKey]));
  const headers: Record<string, string> = { 'anthropic-version': options.version ?? '2023-06-01' };
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  const messagesCall = (request: ChatRequest, prefill: TrimmedPrefix | undefined, stream: boolean): JsonCall => ({
    method: 'POST',
    path: '/v1/messages',
    headers,
    body: messagesBody(request, prefill, stream),
  });

  return {
    id: options.id,
    kind: 'anthropic',

    async chat(request, ctx) {
      const prefill = prefillOf(request);
      const answer = await http.json<WireAnswer>(messagesCall(request, prefill, false), ctx, { ms: ctx.timeouts.firstTokenMs, kind: 'first_token' }).catch((err: unknown) => {
        throw prefixRefused(err, request);
      });
      return chatResult(answer, prefill);
    },

    chatStream(request, ctx) {
      return openOnFirstPull(async () => {
        const prefill = prefillOf(request);
        const upstream = await http.stream(messagesCall(request, prefill, true), ctx).catch((err: unknown) => {
          throw prefixRefused(err, request);
        });
        return readSse(upstream, messagesTranslator(prefill, http.redact), 'upstream stream closed before message_stop');
      });
    },

    async embed() {
      throw new ProviderError('bad_request', 'Anthropic has no embeddings API');
    },

    async probe(ctx) {
      await http.json({ method: 'GET', path: '/v1/models', headers }, ctx, { ms: ctx.timeouts.connectMs, kind: 'connect' });
    },

    close: () => http.close(),
  };
}

// --- request translation -------------------------------------------------------------

/** Anthropic continues a trailing assistant turn natively, but not one ending in whitespace. */
function prefillOf(request: ChatRequest): TrimmedPrefix | undefined {
  const prefix = request.assistantPrefix;
  if (!prefix) return undefined;
  if (prefix.mode === 'none') throw cannotContinue();
  return new TrimmedPrefix(prefix.text);
}

function messagesBody(request: ChatRequest, prefill: TrimmedPrefix | undefined, stream: boolean): Record<string, unknown> {
  const system: ChatMessage[] = [];
  const messages: WireMessage[] = [];
  for (const message of request.messages) {
    if (message.role === 'system') system.push(message);
    else append(messages, toWire(message));
  }
  // An all-whitespace prefix is no prefill at all (Anthropic rejects empty text blocks).
  if (prefill?.sent) append(messages, { role: 'assistant', content: [{ type: 'text', text: prefill.sent }] });

  return {
    model: request.model,
    messages,
    system: systemOf(system, jsonInstruction(request.responseFormat)),
    max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    // Anthropic's range is 0..1 where OpenAI's is 0..2; clamp rather than fail the call.
    temperature: request.temperature === undefined ? undefined : Math.min(request.temperature, 1),
    top_p: request.topP,
    stop_sequences: request.stop,
    tools: request.tools?.map((t) => ({
      name: t.function.name,
      description: t.function.description,
      input_schema: t.function.parameters ?? { type: 'object', properties: {} },
    })),
    tool_choice: toolChoice(request.toolChoice, request.parallelToolCalls),
    metadata: request.user ? { user_id: request.user } : undefined,
    stream: stream || undefined,
  };
}

/**
 * The system messages (and a format instruction after them): one string, or text blocks
 * when a breakpoint (cache_control) must be kept on one of them.
 */
function systemOf(system: ChatMessage[], instruction: string | undefined): string | Block[] | undefined {
  if (!system.some(hasCacheControl)) {
    const texts = system.map((m) => textOf(m.content));
    if (instruction) texts.push(instruction);
    return texts.length ? texts.join('\n\n') : undefined;
  }
  const blocks = system.flatMap((m) => withBreakpoint(m, contentBlocks(m.content).filter((b) => b.type === 'text')));
  if (instruction) blocks.push({ type: 'text', text: instruction });
  return blocks;
}

/** Consecutive same-role messages are merged: Anthropic requires alternating turns. */
function append(messages: WireMessage[], message: WireMessage): void {
  const last = messages.at(-1);
  if (last?.role === message.role) last.content.push(...message.content);
  else messages.push(message);
}

function toWire(message: ChatMessage): WireMessage {
  if (message.role === 'tool') {
    return { role: 'user', content: withBreakpoint(message, [{ type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: textOf(message.content) }]) };
  }
  const content = contentBlocks(message.content);
  for (const call of message.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseArguments(call.function.arguments) });
  }
  return { role: message.role === 'assistant' ? 'assistant' : 'user', content: withBreakpoint(message, content) };
}

function contentBlocks(content: ChatMessage['content']): Block[] {
  if (content === null) return [];
  const parts: ContentPart[] = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
  // Anthropic rejects empty text blocks.
  return parts.flatMap((part): Block[] => {
    const breakpoint = part.cache_control ? { cache_control: part.cache_control } : {};
    if (part.type === 'text') return part.text ? [{ type: 'text', text: part.text, ...breakpoint }] : [];
    return [{ type: 'image', source: imageSource(part.image_url.url), ...breakpoint }];
  });
}

/** A message's own breakpoint goes on its last block (the prompt is cached up to the message's end). */
function withBreakpoint(message: ChatMessage, blocks: Block[]): Block[] {
  const last = blocks.at(-1);
  if (message.cache_control && last) blocks[blocks.length - 1] = { ...last, cache_control: message.cache_control };
  return blocks;
}

function imageSource(url: string): Extract<Block, { type: 'image' }>['source'] {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: 'base64', media_type: data[1], data: data[2] };
  if (url.startsWith('data:')) throw new ProviderError('bad_request', 'image data URLs must be base64-encoded');
  return { type: 'url', url };
}

function textOf(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

function parseArguments(args: string): unknown {
  try {
    return args ? JSON.parse(args) : {};
  } catch {
    throw new ProviderError('bad_request', 'tool call arguments are not valid JSON');
  }
}

function toolChoice(choice: ToolChoice | undefined, parallel: boolean | undefined): Record<string, unknown> | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return parallel === false ? { type: 'auto', ...noParallel } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...noParallel };
  if (choice === 'required') return { type: 'any', ...noParallel };
  return { type: 'tool', name: choice.function.name, ...noParallel };
}

/** Anthropic has no JSON mode: ask for it in the system prompt instead. */
function jsonInstruction(format: ResponseFormat | undefined): string | undefined {
  if (format?.type === 'json_object') return 'Answer only with a single valid JSON object, no other text.';
  if (format?.type !== 'json_schema') return undefined;
  const schema = JSON.stringify(format.json_schema.schema ?? {});
  return `Answer only with valid JSON matching this JSON Schema (${format.json_schema.name}), no other text:\n${schema}`;
}

// --- answer translation --------------------------------------------------------------

function finishReason(reason: string | null | undefined): FinishReason {
  if (reason === 'max_tokens') return 'length';
  if (reason === 'tool_use') return 'tool_calls';
  if (reason === 'refusal') return 'content_filter';
  return 'stop';
}

/**
 * The usage in the gateway's terms: Anthropic's `input_tokens` leaves out what was read from
 * or written to the prompt cache, which are prompt tokens too (priced apart: pricing.ts).
 */
function usageOf(usage: WireUsage | undefined, outputTokens: number): Usage {
  const read = usage?.cache_read_input_tokens ?? 0;
  const written = usage?.cache_creation_input_tokens ?? 0;
  const writtenForAnHour = usage?.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return {
    promptTokens: (usage?.input_tokens ?? 0) + read + written,
    completionTokens: outputTokens,
    ...(read ? { cachedTokens: read } : {}),
    ...(written ? { cacheWriteTokens: written } : {}),
    ...(writtenForAnHour ? { cacheWrite1hTokens: writtenForAnHour } : {}),
  };
}

function chatResult(answer: WireAnswer, prefill: TrimmedPrefix | undefined): ChatResult {
  if (!Array.isArray(answer.content)) throw new ProviderError('server', 'upstream answer has no content');
  const text = answer.content.filter((b) => b.type === 'text').map((b) => (prefill ? prefill.take(b.text ?? '') : (b.text ?? '')));
  const toolCalls: ToolCall[] = answer.content
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ id: b.id ?? '', type: 'function', function: { name: b.name ?? '', arguments: JSON.stringify(b.input ?? {}) } }));
  return {
    content: text.length ? text.join('') : null,
    ...(toolCalls.length ? { toolCalls } : {}),
    finishReason: finishReason(answer.stop_reason),
    ...(answer.usage ? { usage: usageOf(answer.usage, answer.usage.output_tokens ?? 0) } : {}),
  };
}

interface WireStreamEvent {
  type?: string;
  index?: number;
  message?: { usage?: WireUsage };
  content_block?: { type: string; id?: string; name?: string };
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
  usage?: WireUsage;
  error?: unknown;
}

/** One stream's Messages events as chat events; `message_stop` ends it with the stop reason and usage. */
function messagesTranslator(prefill: TrimmedPrefix | undefined, redact: Redactor): SseTranslator {
  // Content block index → OpenAI tool-call index (tool_use blocks counted from 0).
  const toolIndex = new Map<number, number>();
  // The input side from message_start (message_delta may repeat it, cumulative), the output from the last message_delta.
  let inputUsage: WireUsage | undefined;
  let completionTokens = 0;
  let stopReason: string | null | undefined;
  let sawOutput = false;
  return ({ data }, progress) => {
    const event = parseEvent(data);
    switch (event.type) {
      case 'message_start':
        inputUsage = event.message?.usage;
        completionTokens = event.message?.usage?.output_tokens ?? 0;
        return undefined;
      case 'content_block_start': {
        // A text block opens at once, before its first token: only a tool call is output.
        if (event.content_block?.type !== 'tool_use') return undefined;
        progress();
        const index = toolIndex.size;
        toolIndex.set(event.index ?? 0, index);
        sawOutput = true;
        const { id, name } = event.content_block;
        return { type: 'delta', toolCalls: [{ index, id, type: 'function', function: { name, arguments: '' } }] };
      }
      case 'content_block_delta': {
        progress();
        const delta = event.delta;
        if (delta?.type === 'text_delta' && delta.text) {
          const text = prefill ? prefill.take(delta.text) : delta.text;
          if (!text) return undefined;
          sawOutput = true;
          return { type: 'delta', content: text };
        }
        if (delta?.type === 'input_json_delta' && delta.partial_json) {
          const index = toolIndex.get(event.index ?? 0);
          if (index === undefined) throw new ProviderError('malformed_stream', 'tool input delta outside a tool_use block');
          return { type: 'delta', toolCalls: [{ index, function: { arguments: delta.partial_json } }] };
        }
        return undefined;
      }
      case 'message_delta':
        progress();
        stopReason = event.delta?.stop_reason ?? stopReason;
        completionTokens = event.usage?.output_tokens ?? completionTokens;
        if (event.usage?.input_tokens !== undefined) inputUsage = event.usage;
        return undefined;
      case 'message_stop':
        if (!sawOutput && !stopReason) throw new ProviderError('empty_stream', 'upstream stream ended without any output');
        return { type: 'finish', finishReason: finishReason(stopReason), usage: usageOf(inputUsage, completionTokens) };
      case 'error':
        throw streamError(event.error, redact);
      default:
        // ping, content_block_stop and unknown future events carry nothing we need (and meet no deadline).
        return undefined;
    }
  };
}

function parseEvent(data: string): WireStreamEvent {
  try {
    const event = JSON.parse(data) as WireStreamEvent;
    if (typeof event === 'object' && event !== null && typeof event.type === 'string') return event;
  } catch (err) {
    throw new ProviderError('malformed_stream', 'upstream sent an event that is not JSON', { cause: err });
  }
  throw new ProviderError('malformed_stream', 'upstream event has no type');
}
