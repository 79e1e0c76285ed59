// Turns an upstream text/event-stream body into chat stream events, one by one as they
// arrive, and enforces the streaming deadlines: the first token within `firstTokenMs`, then
// at most `idleMs` between two tokens. What counts as a token the adapter says (`progress()`):
// opening events (Anthropic's message_start, vLLM's role-only chunk), pings and comments
// arrive at once on a stalled upstream, so they neither meet the first deadline nor restart
// the idle one. Only the wait for the upstream is timed, never the time the consumer spends
// between two events.
//
// One object takes the body's chunks as undici delivers them (http-client.ts
// UpstreamResponse), parses the SSE framing and asks the adapter what each event means,
// synchronously: between the socket and the gateway there is one promise per wait.
// Stacked async generators (the body's iterator, a parser, the adapter's translation) each
// kept a request, a promise and a suspended frame per pending read: on a slow stream these
// outlive the young generation, and at 5,000 streams they were most of what V8's old space
// collected (bench:gateway --streams 5000 --alloc).
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { CallGuard, UpstreamResponse, UpstreamStream } from './http-client.js';
import { ProviderError, type ChatStreamEvent } from './types.js';

export type SseEvent = EventSourceMessage;

/**
 * What an adapter makes of one upstream event: a chat event to pass on, or nothing. It
 * calls `progress()` when the event is output (the deadline becomes `idleMs` from now) and
 * throws a ProviderError when the event breaks the answer. The answer's `finish` event is
 * its last: the rest of the body is then read to its end, so the keep-alive connection can
 * be reused.
 */
export type SseTranslator = (event: SseEvent, progress: () => void) => ChatStreamEvent | undefined;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/** `unfinished`: what a body that ends before the finish event means, in the upstream's own terms. */
export function readSse(upstream: UpstreamStream, translate: SseTranslator, unfinished: string): AsyncIterableIterator<ChatStreamEvent> {
  return new SseReader(upstream, translate, unfinished);
}

class SseReader implements AsyncIterableIterator<ChatStreamEvent> {
  private readonly body: UpstreamResponse;
  private readonly guard: CallGuard;
  private readonly events: SseEvent[] = [];
  private readonly parser = createParser({ onEvent: (event) => this.events.push(event) });
  private readonly decoder = new TextDecoder();
  // reading → finished (the finish event was passed on; the rest is drained) or closed.
  private state: 'reading' | 'finished' | 'closed' = 'reading';
  // The read waiting for the body, if any: settled from onBodyActivity.
  private resolve: ((result: IteratorResult<ChatStreamEvent>) => void) | undefined;
  private reject: ((error: unknown) => void) | undefined;
  // The deadline in force, how long the upstream has been waited for since it began, and
  // since when the current wait has lasted (-1: not waiting).
  private deadline: 'first_token' | 'idle' = 'first_token';
  private limitMs: number;
  private waitedMs = 0;
  private waitingSince = -1;
  // One timer checks the deadline lazily: it is set when a wait begins and none is pending,
  // and re-set for what is left when it fires early. A steady stream thus costs a timer per
  // deadline, not one per chunk.
  private timer: NodeJS.Timeout | undefined;
  private timerDue = 0;
  private readonly progress = () => {
    this.deadline = 'idle';
    this.limitMs = this.guard.ctx.timeouts.idleMs;
    this.waitedMs = 0;
    // Called while a wait is being settled: the idle deadline starts now, not when that wait began.
    if (this.waitingSince >= 0) this.waitingSince = performance.now();
  };
  private readonly onBodyActivity = () => {
    // The rest of a finished answer was drained (or failed): the call is over.
    if (this.state === 'finished' && this.body.ended) return this.close();
    const resolve = this.resolve;
    const reject = this.reject;
    if (!resolve || !reject) return;
    // Taken while pulling: a failure closes the call, and close() must not settle this read too.
    this.resolve = this.reject = undefined;
    let result: IteratorResult<ChatStreamEvent> | undefined;
    try {
      result = this.pull();
    } catch (error) {
      this.endWait();
      return reject(error);
    }
    if (result === undefined) {
      this.resolve = resolve;
      this.reject = reject;
      return;
    }
    this.endWait();
    resolve(result);
  };
  private readonly checkDeadline = () => {
    this.timer = undefined;
    if (this.waitingSince < 0) return;
    const now = performance.now();
    const left = this.limitMs - this.waitedMs - (now - this.waitingSince);
    if (left > 0) this.setTimer(now, left);
    else this.guard.expire(this.deadline);
  };

  constructor(
    { body, guard }: UpstreamStream,
    private readonly translate: SseTranslator,
    private readonly unfinished: string,
  ) {
    this.body = body;
    this.guard = guard;
    this.limitMs = guard.ctx.timeouts.firstTokenMs;
    body.onActivity = this.onBodyActivity;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Not async: an event already read costs no promise chain, and a wait costs one promise. Reads must not overlap. */
  next(): Promise<IteratorResult<ChatStreamEvent>> {
    if (this.resolve) return Promise.reject(new Error('SseReader: a read is already waiting'));
    let result: IteratorResult<ChatStreamEvent> | undefined;
    try {
      result = this.pull();
    } catch (error) {
      return Promise.reject(error);
    }
    if (result !== undefined) return Promise.resolve(result);
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.beginWait();
    });
  }

  /** The consumer stopped: an unfinished call is cancelled (its socket destroyed); a finished one goes on draining. */
  return(): Promise<IteratorResult<ChatStreamEvent>> {
    if (this.state === 'reading') this.close();
    return Promise.resolve(DONE);
  }

  /** The next event, the end, or undefined when the body has nothing yet; a failure closes the call. */
  private pull(): IteratorResult<ChatStreamEvent> | undefined {
    try {
      while (this.state === 'reading') {
        const event = this.events.shift();
        if (event) {
          const value = this.translate(event, this.progress);
          if (value === undefined) continue;
          if (value.type === 'finish') this.finish();
          return { done: false, value };
        }
        const chunk = this.body.read();
        if (chunk !== null) {
          this.parser.feed(this.decoder.decode(chunk, { stream: true }));
        } else if (this.body.ended) {
          if (this.body.error) throw this.guard.classify(this.body.error, 'body');
          this.parser.feed(this.decoder.decode());
          if (this.events.length === 0) throw new ProviderError('connection_dropped', this.unfinished);
        } else {
          return undefined;
        }
      }
      return DONE;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  private beginWait(): void {
    const now = performance.now();
    this.waitingSince = now;
    const left = this.limitMs - this.waitedMs;
    // A pending timer due later than this wait's deadline (the deadline changed) is replaced.
    if (this.timer === undefined || this.timerDue > now + left) this.setTimer(now, left);
  }

  private endWait(): void {
    this.waitedMs += performance.now() - this.waitingSince;
    this.waitingSince = -1;
  }

  private setTimer(now: number, ms: number): void {
    clearTimeout(this.timer);
    this.timerDue = now + ms;
    this.timer = setTimeout(this.checkDeadline, ms);
  }

  /** The answer is whole: what follows in the body is read and dropped within `idleMs`. */
  private finish(): void {
    this.state = 'finished';
    clearTimeout(this.timer);
    if (this.body.ended) return this.close();
    this.guard.arm('idle', this.guard.ctx.timeouts.idleMs);
    this.body.discard();
  }

  /** Ends the call once: a body that has not ended (read to its end, or failed) is cancelled, its socket destroyed. */
  private close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    clearTimeout(this.timer);
    this.body.onActivity = undefined;
    if (!this.body.ended) this.guard.cancel();
    this.guard.end();
    // A waiting read ends now.
    this.onBodyActivity();
  }
}

/**
 * A stream whose upstream call is made at its first pull, as an async generator's would be,
 * with nothing between the reader and the consumer once it is open.
 */
export function openOnFirstPull(open: () => Promise<AsyncIterator<ChatStreamEvent>>): AsyncIterable<ChatStreamEvent> {
  return {
    [Symbol.asyncIterator]() {
      let opening: Promise<AsyncIterator<ChatStreamEvent>> | undefined;
      let iterator: AsyncIterator<ChatStreamEvent> | undefined;
      return {
        next: () => iterator?.next() ?? (opening ??= open()).then((opened) => (iterator = opened).next()),
        async return() {
          const opened = iterator ?? (await opening?.catch(() => undefined));
          await opened?.return?.();
          return DONE;
        },
      };
    },
  };
}
