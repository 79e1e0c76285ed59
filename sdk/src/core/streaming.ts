// Streams as async iterators. Chat completions: `data: <chunk>` lines ending with
// `data: [DONE]`; Responses: named events (`event:` + `data:`). An error event inside the
// stream is thrown as the typed error; a content-filter end is reported, not thrown;
// leaving the loop early (`break`) aborts the HTTP request.
import type {
  ChatCompletionResponseMessage,
  ChatCompletionStreamEvent,
  ChatToolCall,
  Citation,
  CompletionUsage,
  ResponseFunctionCall,
  ResponseOutputItem,
  Response as ResponseObject,
  ResponseStreamEvent,
  ResponseUsage,
} from '../../../generated/client/types.gen.js';
import { APIConnectionError, APIUserAbortError, makeStreamError, PlatformError, type APIError } from './errors.js';
import { routeOf, traceIdOf, type RouteAttempt } from './headers.js';
import { readJsonLines, readServerSentEvents, type Reading, type ServerSentEvent } from './sse.js';
import type { IdleTimer } from './timeouts.js';

export interface StreamControl {
  /** Aborts the underlying request. */
  abort?: ((reason?: unknown) => void) | undefined;
  /** Releases the request's signal once the stream is over. */
  dispose?: (() => void) | undefined;
  /** The caller's signal: an abort through it is reported as `APIUserAbortError`. */
  signal?: AbortSignal | undefined;
  /** The idle timeout of the answer (none for a stream read back from `toReadableStream()`). */
  idle?: IdleTimer | undefined;
}

const DONE = Symbol('done');
/** The content type of `toReadableStream()`'s output, which `fromReadableStream()` reads. */
const NDJSON = 'application/x-ndjson';
type Handled<T> = T | typeof DONE | undefined;

/** Base of the SSE streams: iterate once with `for await`. */
export abstract class Stream<T> implements AsyncIterable<T> {
  /** The HTTP response (status 200, `text/event-stream`). */
  readonly response: Response;
  readonly #control: StreamControl;
  #started = false;
  #finished = false;
  #failure: unknown;

  constructor(response: Response, control: StreamControl = {}) {
    this.response = response;
    this.#control = control;
  }

  /**
   * The stream back from what `toReadableStream()` wrote (newline-delimited JSON), e.g. in
   * a browser reading its own backend's answer: `ChatCompletionStream.fromReadableStream(res.body)`.
   * It has the same helpers (`collect()`, `finalMessage()`, ...); cancelling it cancels the
   * readable stream.
   */
  static fromReadableStream<S extends Stream<unknown>>(this: new (response: Response) => S, stream: ReadableStream<Uint8Array>): S {
    return new this(new Response(stream, { headers: { 'content-type': NDJSON } }));
  }

  /** `X-Trace-Id` of the streaming response. */
  get traceId(): string | undefined {
    return traceIdOf(this.response.headers);
  }

  /**
   * The upstream attempts the gateway made before the stream's first event
   * (`X-Gateway-Route`); a stream resumed later names who finished it on its last chunk.
   */
  get route(): RouteAttempt[] | undefined {
    return routeOf(this.response.headers);
  }

  /** Grounded streams: whether any source was retrieved (`X-Sources-Returned`), when the server says. */
  get sourcesReturned(): boolean | undefined {
    const header = this.response.headers.get('x-sources-returned');
    return header === null ? undefined : header === 'true';
  }

  /** True once the stream ended (normally, by an error, or aborted). */
  get finished(): boolean {
    return this.#finished;
  }

  /** Turns one SSE event into the value to yield (undefined: skip; DONE: end; throw: fail). */
  protected abstract handle(event: ServerSentEvent): Handled<T>;

  /** Stops reading and aborts the HTTP request. */
  abort(): void {
    this.#control.abort?.(new APIUserAbortError('Stream aborted.'));
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.#started) throw new PlatformError('This stream has already been read; a stream can be iterated only once.');
    this.#started = true;
    return this.#iterate();
  }

  async *#iterate(): AsyncGenerator<T> {
    const body = this.response.body;
    let clean = false;
    try {
      if (!body) throw new APIConnectionError('The streaming response has no body.');
      try {
        const reading: Reading = { idle: this.#control.idle };
        const events = this.response.headers.get('content-type')?.includes(NDJSON) ? readJsonLines(body, reading) : readServerSentEvents(body, reading);
        for await (const event of events) {
          const out = this.handle(event);
          if (out === DONE) {
            reading.complete = true;
            break;
          }
          if (out !== undefined) yield out;
        }
      } catch (error) {
        if (error instanceof PlatformError) throw error;
        if (this.#control.signal?.aborted) throw new APIUserAbortError(undefined, { cause: error });
        throw new APIConnectionError(`The stream broke off: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      clean = true;
    } catch (error) {
      this.#failure = error;
      throw error;
    } finally {
      // Reached on `break` too: abort so the server stops generating.
      if (!clean) this.abort();
      this.#control.dispose?.();
      this.#finished = true;
    }
  }

  /**
   * The events as a web `ReadableStream` of newline-delimited JSON (one event per line), to
   * hand to a web framework: `return new Response(stream.toReadableStream())`;
   * `fromReadableStream()` turns it back into a stream on the other side. Reading it
   * reads this stream (once); cancelling it aborts the request. A failure after the stream
   * started errors the readable stream with the typed error.
   */
  toReadableStream(): ReadableStream<Uint8Array> {
    const iterator = this[Symbol.asyncIterator]();
    const encoder = new TextEncoder();
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const next = await iterator.next();
            if (next.done) controller.close();
            else controller.enqueue(encoder.encode(`${JSON.stringify(next.value)}\n`));
          } catch (error) {
            controller.error(error);
          }
        },
        async cancel() {
          await iterator.return?.();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** Reads the rest of the stream (or reports how an earlier read ended). */
  protected async drain(): Promise<void> {
    if (!this.#started) {
      for await (const _ of this) {
        // accumulate through handle()
      }
      return;
    }
    if (!this.#finished) throw new PlatformError('This stream is being read elsewhere; await the final helpers after the loop.');
    if (this.#failure) throw this.#failure;
  }
}

// ---------------------------------------------------------------- chat completions

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface ChatCompletionStreamResult {
  id: string | undefined;
  model: string | undefined;
  /** Text of choice 0, concatenated. */
  text: string;
  /** Refusal of choice 0, concatenated (null when the model did not refuse). */
  refusal: string | null;
  /** Tool calls of choice 0, assembled from their deltas (id, name, arguments), in index order. */
  toolCalls: ChatToolCall[];
  /** The assistant message of choice 0, as a non-streaming completion would give it. */
  message: ChatCompletionResponseMessage;
  /** Null when the stream ended without a terminal chunk. */
  finishReason: ChatFinishReason | null;
  /** True when the provider's content filter ended the answer (`finish_reason: content_filter`). */
  contentFiltered: boolean;
  /** Usage of the last chunk that carried it (`stream_options.include_usage`). */
  usage: CompletionUsage | undefined;
  /** Citations of a grounded stream's first event. */
  citations: Citation[] | undefined;
  sourcesReturned: boolean | undefined;
}

type ChunkLike = {
  id?: string;
  model?: string;
  choices?: Array<{
    index?: number;
    delta?: {
      content?: string | null;
      refusal?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
  usage?: CompletionUsage | null;
  citations?: Citation[];
  sources_returned?: boolean;
  error?: unknown;
  trace_id?: string;
};

/** Stream of a chat completion (`ChatCompletionStreamEvent`s). */
export class ChatCompletionStream extends Stream<ChatCompletionStreamEvent> {
  #text = '';
  #refusal: string | null = null;
  readonly #toolCalls = new Map<number, ChatToolCall>();
  #id: string | undefined;
  #model: string | undefined;
  #finishReason: ChatFinishReason | null = null;
  #usage: CompletionUsage | undefined;
  #citations: Citation[] | undefined;
  #sourcesReturned: boolean | undefined;

  /** Citations of the grounded stream's first event, once it has been read. */
  get citations(): Citation[] | undefined {
    return this.#citations;
  }

  /** The terminal `finish_reason`, once read. */
  get finishReason(): ChatFinishReason | null {
    return this.#finishReason;
  }

  get contentFiltered(): boolean {
    return this.#finishReason === 'content_filter';
  }

  protected handle(event: ServerSentEvent): Handled<ChatCompletionStreamEvent> {
    if (event.data === '[DONE]') return DONE;
    const chunk = parseJson(event.data) as ChunkLike;
    const first = chunk.choices?.[0];
    if (chunk.error !== undefined || first?.finish_reason === 'error') {
      throw makeStreamError(chunk.error, chunk.trace_id, this.response.headers);
    }
    this.#id ??= chunk.id;
    this.#model ??= chunk.model;
    if (Array.isArray(chunk.citations)) this.#citations = chunk.citations;
    if (typeof chunk.sources_returned === 'boolean') this.#sourcesReturned = chunk.sources_returned;
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (typeof delta?.content === 'string') this.#text += delta.content;
      if (typeof delta?.refusal === 'string') this.#refusal = (this.#refusal ?? '') + delta.refusal;
      for (const call of delta?.tool_calls ?? []) {
        let acc = this.#toolCalls.get(call.index);
        if (!acc) this.#toolCalls.set(call.index, (acc = { id: '', type: 'function', function: { name: '', arguments: '' } }));
        if (call.id) acc.id = call.id;
        // The name comes whole (providers that repeat it on later deltas repeat it whole); the arguments come in pieces.
        if (call.function?.name) acc.function.name = call.function.name;
        if (call.function?.arguments) acc.function.arguments += call.function.arguments;
      }
      if (choice.finish_reason) this.#finishReason = choice.finish_reason as ChatFinishReason;
    }
    if (chunk.usage) this.#usage = chunk.usage;
    return chunk as ChatCompletionStreamEvent;
  }

  /** Reads the whole stream and sums it up. A content-filter end is reported in the result. */
  async collect(): Promise<ChatCompletionStreamResult> {
    await this.drain();
    const toolCalls = [...this.#toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    const message: ChatCompletionResponseMessage = { role: 'assistant', content: this.#text || (toolCalls.length || this.#refusal ? null : '') };
    if (this.#refusal !== null) message.refusal = this.#refusal;
    if (toolCalls.length) message.tool_calls = toolCalls;
    return {
      id: this.#id,
      model: this.#model,
      text: this.#text,
      refusal: this.#refusal,
      toolCalls,
      message,
      finishReason: this.#finishReason,
      contentFiltered: this.contentFiltered,
      usage: this.#usage,
      citations: this.#citations,
      sourcesReturned: this.#sourcesReturned ?? this.sourcesReturned,
    };
  }

  async finalText(): Promise<string> {
    return (await this.collect()).text;
  }

  /** The assistant message of choice 0: text, refusal and tool calls. */
  async finalMessage(): Promise<ChatCompletionResponseMessage> {
    return (await this.collect()).message;
  }

  async finalUsage(): Promise<CompletionUsage | undefined> {
    return (await this.collect()).usage;
  }
}

// ---------------------------------------------------------------- Responses API

/** Every named event of a Responses stream, by its SSE event name. */
export type ResponseStreamEventMap = { [E in ResponseStreamEvent as E['type']]: E };
export type ResponseStreamEventName = keyof ResponseStreamEventMap;

export interface ResponseStreamResult {
  /** Output text: the final response's `output_text`, else the concatenated deltas. */
  text: string;
  /** The response of the terminal event (`response.completed`, `.incomplete` or `.failed`). */
  response: ResponseObject | undefined;
  status: ResponseObject['status'] | undefined;
  usage: ResponseUsage | undefined;
  /** True when the answer stopped on the content filter (`incomplete_details.reason`). */
  contentFiltered: boolean;
  /** Function calls of the output (from the final response, else assembled from the events). */
  toolCalls: ResponseFunctionCall[];
  /** Refusal text of the output messages, concatenated (null when the model did not refuse). */
  refusal: string | null;
  /** Grounded responses: the citations of the final response, when sent. */
  citations: Citation[] | undefined;
  /** Grounded responses: whether any source was retrieved (`X-Sources-Returned`). */
  sourcesReturned: boolean | undefined;
}

/** Stream of a Responses API call: events typed by name (`event.type`). */
export class ResponseStream extends Stream<ResponseStreamEvent> {
  #text = '';
  #response: ResponseObject | undefined;
  readonly #items = new Map<number, ResponseOutputItem>();

  protected handle(event: ServerSentEvent): Handled<ResponseStreamEvent> {
    if (event.data === '[DONE]') return DONE;
    const data = parseJson(event.data) as Record<string, unknown>;
    if (typeof data.type !== 'string' && event.event) data.type = event.event;
    const typed = data as ResponseStreamEvent;
    switch (typed.type) {
      case 'error':
        throw makeStreamError(typed.error ?? { name: typed.code, message: typed.message }, typed.trace_id, this.response.headers);
      case 'response.output_text.delta':
        this.#text += typed.delta;
        break;
      case 'response.output_item.added':
      case 'response.output_item.done':
        this.#items.set(typed.output_index, { ...typed.item });
        break;
      case 'response.function_call_arguments.delta': {
        const item = this.#items.get(typed.output_index);
        if (item?.type === 'function_call') item.arguments += typed.delta;
        break;
      }
      case 'response.created':
      case 'response.in_progress':
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        this.#response = typed.response;
        break;
    }
    return typed;
  }

  /** Reads the whole stream and sums it up (a failed response is returned, not thrown). */
  async collect(): Promise<ResponseStreamResult> {
    await this.drain();
    const response = this.#response;
    const output = response?.output?.length ? response.output : [...this.#items.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
    const refusals = output.flatMap((item) => (item.type === 'message' ? item.content : [])).flatMap((part) => (part.type === 'refusal' ? [part.refusal] : []));
    return {
      text: response?.output_text || this.#text,
      toolCalls: output.filter((item): item is ResponseFunctionCall => item.type === 'function_call'),
      refusal: refusals.length ? refusals.join('') : null,
      citations: (response as { citations?: Citation[] } | undefined)?.citations,
      response,
      status: response?.status,
      usage: response?.usage ?? undefined,
      contentFiltered: response?.incomplete_details?.reason === 'content_filter',
      sourcesReturned: this.sourcesReturned,
    };
  }

  /** The final response; a `failed` one is thrown as its typed error. */
  async finalResponse(): Promise<ResponseObject> {
    const { response } = await this.collect();
    if (!response) throw new PlatformError('The stream ended without a response.');
    if (response.status === 'failed') throw failedResponseError(response, this.response.headers);
    return response;
  }

  async finalText(): Promise<string> {
    return (await this.collect()).text;
  }

  async finalUsage(): Promise<ResponseUsage | undefined> {
    return (await this.collect()).usage;
  }
}

function failedResponseError(response: ResponseObject, headers: Headers): APIError {
  const error = response.error as { code?: string; message?: string } | null | undefined;
  return makeStreamError({ name: error?.code, message: error?.message ?? 'The response failed.' }, undefined, headers);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new APIConnectionError(`Malformed stream event: ${text.slice(0, 200)}`, { cause });
  }
}
