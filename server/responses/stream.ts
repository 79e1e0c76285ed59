// A gateway chat stream → the Responses API's named events, in the order OpenAI's clients
// expect: response.created, response.in_progress, then per output item
// output_item.added → (content_part.added → text or refusal deltas → .done →
// content_part.done) or function_call_arguments.delta/.done → output_item.done, and a
// terminal response.completed or response.incomplete. Every event carries the next
// sequence_number. A failure after the stream started ends it with an `error` event and
// `response.failed` (both with the enriched error and the trace id).
import { streamUsage, type GatewayStream } from '../gateway/gateway-service.js';
import type { ChatStreamEvent, FinishReason, ToolCall } from '../providers/types.js';
import { functionCallItem, incompleteReason, newId, reasoningItem, responseObject, usageOf, type ResponseFrame, type ResponseState } from './output.js';
import type { AIErrorObject, OutputItem, OutputMessage, ResponseObject, StreamEvent } from './types.js';

export interface StreamOptions {
  frame: ResponseFrame;
  upstream: GatewayStream;
  /** Output moderation of guarded routes: text to send now, or null to stop (content_filter). */
  moderation: { push(chunk: string): Promise<string | null>; flush(): Promise<string | null> } | null;
  /** Tool calls the platform runs itself (image generation): collected, not streamed as function calls. */
  internal(name: string): boolean;
  /** Runs the collected internal calls; yields the finished output items in order. */
  runInternal(calls: ToolCall[]): AsyncIterable<{ started(): OutputItem; done: Promise<OutputItem> }>;
  /** Annotations of the answer's text (grounding citations). */
  annotations: (text: string) => Record<string, unknown>[];
  /** Fields every terminal event's response adds (grounded: sources_returned, citations). */
  report?: Record<string, unknown>;
  describeError(error: unknown): { error: AIErrorObject; traceId: string };
  /** Called once with the final response (completed or incomplete), to store it. */
  finished(response: ResponseObject): Promise<void>;
}

type OpenPart = { kind: 'text' | 'refusal'; index: number; text: string };

export async function* responseEvents(options: StreamOptions): AsyncGenerator<StreamEvent> {
  let sequence = 0;
  const event = <T extends Omit<StreamEvent, 'sequence_number'>>({ type, ...rest }: T) => ({ type, sequence_number: sequence++, ...rest }) as unknown as StreamEvent;
  const state: ResponseState = { status: 'in_progress', output: [], usage: null };
  const snapshot = () => responseObject({ ...options.frame, model: options.upstream.served.model.id, provider: options.upstream.served.provider }, state);

  // Set and cleared by the helpers below (TypeScript cannot follow that into the catch block).
  let message = null as { item: OutputMessage; index: number; part: OpenPart | null } | null;
  type StreamedCall = { item: Extract<OutputItem, { type: 'function_call' }>; index: number };
  const calls = new Map<number, StreamedCall | ToolCall>();
  /** The function call whose arguments are streaming: done before any other item starts. */
  let openCall = null as StreamedCall | null;

  function* closeCall(): Generator<StreamEvent> {
    const call = openCall;
    if (!call) return;
    openCall = null;
    call.item.status = 'completed';
    yield event({ type: 'response.function_call_arguments.done', item_id: call.item.id, output_index: call.index, name: call.item.name, arguments: call.item.arguments });
    yield event({ type: 'response.output_item.done', output_index: call.index, item: structuredClone(call.item) });
  }
  function* openMessage(): Generator<StreamEvent> {
    if (message) return;
    yield* closeCall();
    const item: OutputMessage = { type: 'message', id: newId('msg'), role: 'assistant', status: 'in_progress', content: [] };
    message = { item, index: state.output.length, part: null };
    state.output.push(item);
    yield event({ type: 'response.output_item.added', output_index: message.index, item: structuredClone(item) });
  }
  function* closePart(): Generator<StreamEvent> {
    const open = message?.part;
    if (!message || !open) return;
    const base = { item_id: message.item.id, output_index: message.index, content_index: open.index };
    if (open.kind === 'text') {
      const annotations = options.annotations(open.text);
      for (const [annotation_index, annotation] of annotations.entries()) {
        yield event({ type: 'response.output_text.annotation.added', ...base, annotation_index, annotation });
      }
      yield event({ type: 'response.output_text.done', ...base, text: open.text });
      message.item.content[open.index] = { type: 'output_text', text: open.text, annotations };
    } else {
      yield event({ type: 'response.refusal.done', ...base, refusal: open.text });
      message.item.content[open.index] = { type: 'refusal', refusal: open.text };
    }
    yield event({ type: 'response.content_part.done', ...base, part: structuredClone(message.item.content[open.index]) });
    message.part = null;
  }
  function* openPart(kind: OpenPart['kind']): Generator<StreamEvent> {
    yield* openMessage();
    if (message!.part?.kind === kind) return;
    yield* closePart();
    const index = message!.item.content.length;
    message!.part = { kind, index, text: '' };
    const part = kind === 'text' ? { type: 'output_text' as const, text: '', annotations: [] } : { type: 'refusal' as const, refusal: '' };
    message!.item.content.push(part);
    yield event({ type: 'response.content_part.added', item_id: message!.item.id, output_index: message!.index, content_index: index, part: structuredClone(part) });
  }
  function* closeMessage(status: OutputMessage['status']): Generator<StreamEvent> {
    if (!message) return;
    yield* closePart();
    message.item.status = status;
    yield event({ type: 'response.output_item.done', output_index: message.index, item: structuredClone(message.item) });
    message = null;
  }
  function* text(kind: OpenPart['kind'], delta: string): Generator<StreamEvent> {
    yield* openPart(kind);
    const open = message!.part!;
    open.text += delta;
    const base = { item_id: message!.item.id, output_index: message!.index, content_index: open.index, delta };
    yield event(kind === 'text' ? { type: 'response.output_text.delta', ...base } : { type: 'response.refusal.delta', ...base });
  }
  function* toolDelta(delta: NonNullable<Extract<ChatStreamEvent, { type: 'delta' }>['toolCalls']>[number]): Generator<StreamEvent> {
    let call = calls.get(delta.index);
    if (!call) {
      const started: ToolCall = { id: delta.id ?? `call_${newId('fc').slice(3, 27)}`, type: 'function', function: { name: delta.function?.name ?? '', arguments: '' } };
      if (options.internal(started.function.name)) {
        calls.set(delta.index, started);
      } else {
        // As OpenAI streams them: one item at a time, each done before the next is added.
        yield* closeMessage('completed');
        yield* closeCall();
        const item = functionCallItem(started, 'in_progress');
        openCall = { item, index: state.output.length };
        state.output.push(item);
        calls.set(delta.index, openCall);
        yield event({ type: 'response.output_item.added', output_index: openCall.index, item: structuredClone(item) });
      }
      call = calls.get(delta.index)!;
    }
    const fragment = delta.function?.arguments ?? '';
    if ('item' in call) {
      if (!fragment) return;
      call.item.arguments += fragment;
      // An upstream interleaving calls (rare) adds to one already done: its final item has
      // every fragment, its events only those before it was done.
      if (call === openCall) yield event({ type: 'response.function_call_arguments.delta', item_id: call.item.id, output_index: call.index, delta: fragment });
    } else {
      call.function.arguments += fragment;
    }
  }

  try {
    yield event({ type: 'response.created', response: snapshot() });
    yield event({ type: 'response.in_progress', response: snapshot() });
    let finish: FinishReason | undefined;
    for await (const upstream of options.upstream) {
      if (upstream.type === 'finish') {
        finish = upstream.finishReason;
        break;
      }
      if (upstream.content) {
        const released = options.moderation ? await options.moderation.push(upstream.content) : upstream.content;
        // The blocked text is not sent; leaving the loop cancels the upstream call.
        if (released === null) {
          finish = 'content_filter';
          break;
        }
        if (released) yield* text('text', released);
      }
      if (upstream.refusal) yield* text('refusal', upstream.refusal);
      for (const delta of upstream.toolCalls ?? []) yield* toolDelta(delta);
    }
    if (finish === undefined) return; // the client left
    if (finish !== 'content_filter' && options.moderation) {
      const rest = await options.moderation.flush();
      if (rest === null) finish = 'content_filter';
      else if (rest) yield* text('text', rest);
    }
    const incomplete = incompleteReason(finish);
    yield* closeMessage(incomplete ? 'incomplete' : 'completed');
    yield* closeCall();
    const internal = [...calls.values()].filter((call): call is ToolCall => !('item' in call));
    if (incomplete !== 'content_filter') {
      for await (const run of options.runInternal(internal)) {
        const index = state.output.length;
        const started = run.started();
        state.output.push(started);
        yield event({ type: 'response.output_item.added', output_index: index, item: structuredClone(started) });
        yield event({ type: 'response.image_generation_call.in_progress', item_id: started.id, output_index: index });
        yield event({ type: 'response.image_generation_call.generating', item_id: started.id, output_index: index });
        const done = await run.done;
        state.output[index] = done;
        yield event({ type: 'response.image_generation_call.completed', item_id: started.id, output_index: index });
        yield event({ type: 'response.output_item.done', output_index: index, item: structuredClone(done) });
      }
    }
    const usage = streamUsage(options.upstream.attempts);
    // Known only from the final usage: the reasoning item comes last rather than first.
    if (usage.reasoningTokens) {
      const item = reasoningItem();
      const index = state.output.push(item) - 1;
      yield event({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress' } });
      yield event({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
    }
    state.usage = usageOf(usage);
    state.status = incomplete ? 'incomplete' : 'completed';
    state.incomplete = incomplete;
    const final = snapshot();
    await options.finished(final);
    yield event({ type: incomplete ? 'response.incomplete' : 'response.completed', response: { ...final, ...options.report } });
  } catch (error) {
    const { error: enriched, traceId } = options.describeError(error);
    // The failed snapshot keeps what was sent, its unfinished items marked incomplete (failed: an image).
    const open = message?.part;
    if (message && open) message.item.content[open.index] = open.kind === 'text' ? { type: 'output_text', text: open.text, annotations: [] } : { type: 'refusal', refusal: open.text };
    for (const item of state.output) {
      // An image being drawn failed with the response; anything else in progress stops where it was.
      if (item.status === 'in_progress' || (item.type === 'image_generation_call' && item.status === 'generating')) {
        item.status = item.type === 'image_generation_call' ? 'failed' : 'incomplete';
      }
    }
    state.status = 'failed';
    state.error = { code: enriched.name, message: enriched.message };
    yield event({ type: 'error', code: enriched.name, message: enriched.message, param: enriched.param ?? null, error: enriched, trace_id: traceId });
    yield event({ type: 'response.failed', response: { ...snapshot(), ...options.report }, error: enriched, trace_id: traceId });
  }
}
