// Turns an upstream text/event-stream body into SSE events, one by one as they arrive, and
// enforces the streaming deadlines: the first event within `firstTokenMs`, then at most
// `idleMs` of silence between chunks. Only the wait for the upstream is timed, never the
// time the consumer spends between two events.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { CallGuard, UpstreamStream } from './http-client.js';

export type SseEvent = EventSourceMessage;

/**
 * `isTerminal` recognises the upstream's end-of-answer event ([DONE], message_stop): once
 * it has been seen, a consumer that stops reading lets the body finish so the keep-alive
 * connection can be reused; stopping earlier cancels the upstream call.
 */
export async function* readSse({ body, guard }: UpstreamStream, isTerminal: (event: SseEvent) => boolean): AsyncGenerator<SseEvent> {
  const { firstTokenMs, idleMs } = guard.ctx.timeouts;
  const pending: SseEvent[] = [];
  const parser = createParser({ onEvent: (event) => pending.push(event) });
  const decoder = new TextDecoder();
  const chunks = body[Symbol.asyncIterator]();
  let sawEvent = false;
  let sawTerminal = false;
  let ended = false;
  guard.arm('first_token', firstTokenMs);
  try {
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await chunks.next();
      } catch (err) {
        throw guard.classify(err, 'body');
      }
      if (next.done) {
        ended = true;
        guard.disarm();
        parser.feed(decoder.decode());
        for (const event of pending.splice(0)) yield event;
        return;
      }
      parser.feed(decoder.decode(next.value, { stream: true }));
      // Comments (keep-alives) do not count as the first token; any chunk resets idleness.
      if (pending.length > 0) sawEvent = true;
      if (sawEvent) guard.disarm();
      while (pending.length > 0) {
        const event = pending.shift()!;
        sawTerminal ||= isTerminal(event);
        yield event;
      }
      if (sawEvent) guard.arm('idle', idleMs);
    }
  } finally {
    guard.disarm();
    if (!ended) {
      if (sawTerminal) await drain(chunks, guard, idleMs);
      else guard.cancel();
    }
  }
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
