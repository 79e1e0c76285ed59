// Building the Response object: ids, the frame every snapshot shares (id, model, routing
// facts, echoed request fields), typed output items, usage, status and incomplete_details.
import { randomBytes } from 'node:crypto';
import type { FinishReason, ToolCall, Usage as ProviderUsage } from '../providers/types.js';
import type { OutputItem, OutputMessage, ResponseObject, Usage } from './types.js';

/** OpenAI-style ids: a prefix for the kind, then random hex. */
export function newId(prefix: 'resp' | 'msg' | 'fc' | 'ig' | 'rs'): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

/** The fields of a response that do not change while it is generated. */
export type ResponseFrame = Pick<
  ResponseObject,
  'id' | 'object' | 'created_at' | 'model' | 'instructions' | 'previous_response_id' | 'metadata' | 'provider' | 'routing_mechanism' | 'tradition'
>;

export interface ResponseState {
  status: ResponseObject['status'];
  output: OutputItem[];
  usage: Usage | null;
  incomplete?: 'max_output_tokens' | 'content_filter';
  error?: { code: string; message: string };
}

export function responseObject(frame: ResponseFrame, state: ResponseState): ResponseObject {
  return {
    ...frame,
    status: state.status,
    output: state.output,
    output_text: outputText(state.output),
    incomplete_details: state.incomplete ? { reason: state.incomplete } : null,
    error: state.error ?? null,
    usage: state.usage,
  };
}

/** The concatenated text of every output_text part (OpenAI's convenience field). */
export function outputText(output: readonly OutputItem[]): string {
  return output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');
}

export function usageOf(usage: ProviderUsage): Usage {
  return {
    input_tokens: usage.promptTokens,
    output_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    ...(usage.cachedTokens || usage.cacheWriteTokens
      ? { input_tokens_details: { cached_tokens: usage.cachedTokens ?? 0, cache_write_tokens: usage.cacheWriteTokens ?? 0 } }
      : {}),
  };
}

/** Why a response stopped early, from the upstream's finish reason (none: it completed). */
export function incompleteReason(finish: FinishReason): ResponseState['incomplete'] {
  if (finish === 'length') return 'max_output_tokens';
  return finish === 'content_filter' ? 'content_filter' : undefined;
}

export function messageItem(text: string | null, refusal: string | null | undefined, status: OutputMessage['status'], annotations: object[] = []): OutputMessage {
  const content: OutputMessage['content'] = [];
  if (text) content.push({ type: 'output_text', text, annotations: annotations as Record<string, unknown>[] });
  if (refusal) content.push({ type: 'refusal', refusal });
  return { type: 'message', id: newId('msg'), role: 'assistant', status, content };
}

/**
 * A reasoning model reasoned before answering: the reasoning item says so. Chat-completion
 * upstreams return no reasoning text, so its summary is empty (as OpenAI's is unless asked).
 */
export function reasoningItem(): Extract<OutputItem, { type: 'reasoning' }> {
  return { type: 'reasoning', id: newId('rs'), summary: [], encrypted_content: null, status: 'completed' };
}

export function functionCallItem(call: ToolCall, status: 'in_progress' | 'completed'): Extract<OutputItem, { type: 'function_call' }> {
  return { type: 'function_call', id: newId('fc'), call_id: call.id, name: call.function.name, arguments: call.function.arguments, status };
}
