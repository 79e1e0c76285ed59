// Turns an upstream text/event-stream body into SSE events, one by one as they arrive, and
// enforces the streaming deadlines: the first token within `firstTokenMs`, then at most
// `idleMs` between two tokens. What counts as a token the adapter says (`progress()`):
// opening events (Anthropic's message_start, vLLM's role-only chunk), pings and comments
// arrive at once on a stalled upstream, so they neither meet the first deadline nor
// restart the idle one. Only the wait for the upstream is timed, never the time the
// consumer spends between two events.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { CallGuard, UpstreamStream } from './http-client.js';

export type SseEvent = EventSourceMessage;

export interface SseStream extends AsyncIterable<SseEvent> {
  /** The adapter read output (text, a tool call, the finish): the deadline becomes `idleMs` from now. */
  progress(): void;
}

/**
 * `isTerminal` recognises the upstream's end-of-answer event ([DONE], message_stop): once
 * it has been seen, a consumer that stops reading lets the body finish so the keep-alive
 * connection can be reused; stopping earlier cancels the upstream call.
 */
export function readSse({ body, guard }: UpstreamStream, isTerminal: (event: SseEvent) => boolean): SseStream {
  const { firstTokenMs, idleMs } = guard.ctx.timeouts;
  // The deadline in force, and how long the upstream has been waited for since it began.
  let deadline: 'first_token' | 'idle' = 'first_token';
  let limitMs = firstTokenMs;
  let waitedMs = 0;

  async function* events(): AsyncGenerator<SseEvent> {
    const pending: SseEvent[] = [];
    const parser = createParser({ onEvent: (event) => pending.push(event) });
    const decoder = new TextDecoder();
    const chunks = body[Symbol.asyncIterator]();
    let sawTerminal = false;
    let ended = false;
    try {
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        guard.arm(deadline, limitMs - waitedMs);
        const started = performance.now();
        try {
          next = await chunks.next();
        } catch (err) {
          throw guard.classify(err, 'body');
        }
        guard.disarm();
        waitedMs += performance.now() - started;
        if (next.done) {
          ended = true;
          parser.feed(decoder.decode());
          for (const event of pending.splice(0)) yield event;
          return;
        }
        parser.feed(decoder.decode(next.value, { stream: true }));
        while (pending.length > 0) {
          const event = pending.shift()!;
          sawTerminal ||= isTerminal(event);
          yield event;
        }
      }
    } finally {
      guard.disarm();
      if (!ended) {
        if (sawTerminal) await drain(chunks, guard, idleMs);
        else guard.cancel();
      }
      guard.end();
    }
  }

  return {
    progress() {
      deadline = 'idle';
      limitMs = idleMs;
      waitedMs = 0;
    },
    [Symbol.asyncIterator]: events,
  };
}

async function drain(chunks: AsyncIterator<Uint8Array>, guard: CallGuard, idleMs: number): Promise<void> {
  try {
    guard.arm('idle', idleMs);
    while (!(await chunks.next()).done) guard.arm('idle', idleMs);
    guard.disarm();
  } catch {
    // The answer is already complete; a failure now only costs the connection.
    guard.cancel();
  }
}
