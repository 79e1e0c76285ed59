// A stream past its commit point (its first event has arrived, the client may already have
// it): relays the upstream's events, and when the upstream breaks, resumes the answer on
// another deployment with the partial text (as an assistant prefix, or quoted in a user
// turn), or ends with the original error.
//
// A hand-written iterator rather than an async generator: on a slow stream every pending
// read of a generator (its request, promise and suspended frame) outlives V8's young
// generation; here a read is the upstream read's own promise plus one `then`.
import type { Logger } from 'pino';
import { ProviderError, type ChatMessage, type ChatStreamEvent } from '../providers/types.js';
import type { Served } from './catalog.js';
import { kindFacts, toCallerError } from './upstream-failures.js';
import { estimateUsage, type Attempt, type UpstreamCall } from './upstream-call.js';

/** One deployment's stream, opened and past its first event. */
export interface OpenStream {
  served: Served;
  /** The attempt's bookkeeping; settled once. */
  upstream: UpstreamCall;
  /** The stream's events; the first is already buffered (the commit point has passed). */
  next(): Promise<IteratorResult<ChatStreamEvent>>;
  /** Cancels the upstream call (and stops following the request's signal). */
  close(): Promise<void>;
  /** Stops following the request's signal: the stream is over. */
  unlink(): void;
}

export interface StreamScope {
  messages: ChatMessage[];
  signal: AbortSignal;
  readonly log: Logger;
  /** Opens a continuation of `prefix` elsewhere; undefined when this stream is not resumed (per route). */
  resume: ((prefix: string) => Promise<OpenStream>) | undefined;
  /** Bills the attempts once they are final (usage-scope.ts). */
  metered: () => void;
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

export class CommittedStream implements AsyncIterableIterator<ChatStreamEvent> {
  private text = '';
  // A refusal is never resumed (another upstream would go on as text, not as a refusal).
  private refusal = '';
  // Text of earlier attempts: a resumed attempt is billed for its own part only.
  private before = '';
  private toolCallsSent = false;
  private released = false;
  private resuming = false;
  // A client may leave before the first read (right after the headers), or while one waits.
  private readonly onAbort = () => void this.release();

  constructor(
    private current: OpenStream,
    readonly attempts: Attempt[],
    private readonly scope: StreamScope,
  ) {
    if (scope.signal.aborted) void this.release();
    else scope.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Who answers now (changes when a broken stream is resumed elsewhere). */
  get served(): Served {
    return this.current.served;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ChatStreamEvent>> {
    if (this.released) return Promise.resolve(DONE);
    return this.current.next().then(this.onRead, this.onBreak);
  }

  /** The consumer stopped early (output moderation, the client left): the upstream call is cancelled. */
  async return(): Promise<IteratorResult<ChatStreamEvent>> {
    await this.release();
    return DONE;
  }

  private readonly onRead = (read: IteratorResult<ChatStreamEvent>): IteratorResult<ChatStreamEvent> | Promise<IteratorResult<ChatStreamEvent>> => {
    if (read.done) return this.onBreak(new ProviderError('connection_dropped', 'The upstream stream ended without finishing.'));
    const event = read.value;
    if (event.type === 'finish') {
      this.current.upstream.succeed(event.usage ?? this.estimate());
      void this.release();
    } else {
      if (event.content) this.text += event.content;
      if (event.refusal) this.refusal += event.refusal;
      if (event.toolCalls?.length) this.toolCallsSent = true;
    }
    return read;
  };

  private readonly onBreak = async (error: unknown): Promise<IteratorResult<ChatStreamEvent>> => {
    const { current, scope } = this;
    await current.close();
    current.upstream.fail(error, scope.signal.aborted, this.estimate());
    if (scope.signal.aborted || this.released) {
      await this.release();
      return DONE;
    }
    const facts = kindFacts(error);
    scope.log.warn({ deployment: current.served.deployment.id, kind: facts.kind, err: error, sentChars: this.text.length }, 'upstream stream broke after it started');
    if (!facts.failover || !scope.resume || this.toolCallsSent || this.refusal) {
      await this.release();
      throw toCallerError(error);
    }
    this.before = this.text;
    let continuation: OpenStream | undefined;
    this.resuming = true;
    try {
      continuation = await scope.resume(this.text);
    } catch {
      // No deployment could continue it: the stream ends with the original error.
    } finally {
      this.resuming = false;
    }
    if (this.released) {
      // The client left while the continuation was opening: release() left metering to here.
      if (continuation) await this.leave(continuation);
      scope.metered();
      return DONE;
    }
    if (!continuation) {
      await this.release();
      throw toCallerError(error);
    }
    this.current = continuation;
    return this.next();
  };

  /** What the current attempt produced, when the upstream never reported it (it broke, or was left). */
  private estimate() {
    return estimateUsage(this.scope.messages, this.before, this.text.slice(this.before.length) + this.refusal);
  }

  /** Ends the stream once: an unsettled attempt is cancelled and settled with what it produced; the attempts are billed. */
  private async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.scope.signal.removeEventListener('abort', this.onAbort);
    // While a continuation opens, its attempt is not final yet: onBreak leaves it and meters.
    if (this.resuming) return;
    await this.leave(this.current);
    this.scope.metered();
  }

  private async leave(stream: OpenStream): Promise<void> {
    if (!stream.upstream.settled) {
      await stream.close();
      stream.upstream.fail(new Error('stream left by its consumer'), true, this.estimate());
    }
    stream.unlink();
  }
}
