// Turns an upstream text/event-stream body into chat stream events, one by one as they
// arrive, and enforces the streaming deadlines: the first token within `firstTokenMs`, then
// at most `idleMs` between two tokens. What counts as a token the adapter says (`progress()`):
// opening events (Anthropic's message_start, vLLM's role-only chunk), pings and comments
// arrive at once on a stalled upstream, so they neither meet the first deadline nor restart
// the idle one. Only the wait for the upstream is timed, never the time the consumer spends
// between two events.
//
// One object reads the body, parses the SSE framing and asks the adapter what each event
// means, synchronously: between the socket and the gateway there is one promise per wait.
// Stacked async generators (the body's iterator, a parser, the adapter's translation) each
// kept a request, a promise and a suspended frame per pending read: on a slow stream these
// outlive the young generation, and at 5,000 streams they were most of what V8's old space
// collected (bench:gateway --streams 5000 --alloc).
import { finished, type Readable } from 'node:stream';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { CallGuard, UpstreamStream } from './http-client.js';
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
  private readonly body: Readable;
  private readonly guard: CallGuard;
  private readonly events: SseEvent[] = [];
  private readonly parser = createParser({ onEvent: (event) => this.events.push(event) });
  private readonly decoder = new TextDecoder();
  // reading → finished (the finish event was passed on; the rest is drained) or closed.
  private state: 'reading' | 'finished' | 'closed' = 'reading';
  private bodyEnded = false;
  private bodyError: unknown;
  private wake: (() => void) | undefined;
  // The deadline in force, and how long the upstream has been waited for since it began.
  private deadline: 'first_token' | 'idle' = 'first_token';
  private limitMs: number;
  private waitedMs = 0;
  private readonly progress = () => {
    this.deadline = 'idle';
    this.limitMs = this.guard.ctx.timeouts.idleMs;
    this.waitedMs = 0;
  };
  private readonly onBodyActivity = () => {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  };

  constructor(
    { body, guard }: UpstreamStream,
    private readonly translate: SseTranslator,
    private readonly unfinished: string,
  ) {
    this.body = body;
    this.guard = guard;
    this.limitMs = guard.ctx.timeouts.firstTokenMs;
    body.on('readable', this.onBodyActivity);
    // End, error or premature close (the call aborted by a deadline or the caller).
    finished(body, { writable: false }, (error) => {
      this.bodyEnded = true;
      this.bodyError = error;
      this.onBodyActivity();
      if (this.state === 'finished') this.close();
    });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ChatStreamEvent>> {
    try {
      while (this.state === 'reading') {
        const event = this.events.shift();
        if (event) {
          const value = this.translate(event, this.progress);
          if (value === undefined) continue;
          if (value.type === 'finish') this.finish();
          return { done: false, value };
        }
        const chunk: Buffer | null = this.body.read();
        if (chunk !== null) {
          this.parser.feed(this.decoder.decode(chunk, { stream: true }));
        } else if (this.bodyEnded) {
          if (this.bodyError) throw this.guard.classify(this.bodyError, 'body');
          this.parser.feed(this.decoder.decode());
          if (this.events.length === 0) throw new ProviderError('connection_dropped', this.unfinished);
        } else {
          await this.waitForBody();
        }
      }
      return DONE;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** The consumer stopped: an unfinished call is cancelled (its socket destroyed); a finished one goes on draining. */
  async return(): Promise<IteratorResult<ChatStreamEvent>> {
    if (this.state === 'reading') this.close();
    return DONE;
  }

  private async waitForBody(): Promise<void> {
    this.guard.arm(this.deadline, this.limitMs - this.waitedMs);
    const started = performance.now();
    await new Promise<void>((resolve) => (this.wake = resolve));
    this.guard.disarm();
    this.waitedMs += performance.now() - started;
  }

  /** The answer is whole: what follows in the body is read and dropped within `idleMs`. */
  private finish(): void {
    this.state = 'finished';
    if (this.bodyEnded) return this.close();
    this.body.off('readable', this.onBodyActivity);
    this.guard.arm('idle', this.guard.ctx.timeouts.idleMs);
    this.body.resume();
  }

  /** Ends the call once: a body that has not ended (read to its end, or failed) is cancelled, its socket destroyed. */
  private close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.body.off('readable', this.onBodyActivity);
    if (!this.bodyEnded) this.guard.cancel();
    this.guard.end();
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
