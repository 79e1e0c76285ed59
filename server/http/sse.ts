// Writes a handler's event stream as server-sent events. JSON.stringify never emits a raw
// newline, so each event is exactly one `data:` line (plus `event:` for named framing).
import type { Response } from 'express';
import { toApiError } from './errors/render.js';
import { noteError } from './request-log.js';

export interface SseOptions {
  framing: 'data' | 'named';
  signal: AbortSignal;
  /**
   * The in-stream event that reports a failure after the 200 has been sent (spec 6);
   * `sequence` counts the events before it and `last` is the last one sent that named a
   * new model (or the first).
   */
  errorEvent: (error: unknown, sequence: number, last: object | undefined) => object;
}

export async function writeSse(res: Response, events: AsyncIterable<object>, options: SseOptions): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  // The headers leave with the first event, in one write, when it is ready in this turn of
  // the event loop (a committed chat stream's is: a separate header write cost its first
  // byte ~0.3 ms); otherwise on their own, so that the client learns at once that it began.
  const headersAlone = setImmediate(() => res.flushHeaders());

  let sent = 0;
  // What the error event continues (a chat chunk's id, created and model): the first event,
  // and again whenever the model changes (a resumed stream). Not every event: the last one
  // would be kept alive across each wait for the next, and on a slow stream outlive the
  // young generation.
  let last: { model?: unknown } | undefined;
  const send = (event: object) => {
    sent++;
    if (last === undefined || (event as { model?: unknown }).model !== last.model) last = event;
    const type = (event as { type?: unknown }).type;
    const name = options.framing === 'named' && typeof type === 'string' ? `event: ${type}\n` : '';
    return res.write(`${name}data: ${JSON.stringify(event)}\n\n`);
  };
  const iterator = events[Symbol.asyncIterator]();
  try {
    while (!options.signal.aborted) {
      const next = await iterator.next();
      if (next.done) break;
      const flowing = send(next.value);
      if (sent === 1) {
        // The headers went with it.
        clearImmediate(headersAlone);
        // Node corks the socket on a write until the next tick, and events that arrive in one
        // burst (an upstream's first packet often holds several) are processed before that tick
        // comes: the first would wait for the whole burst. It goes out at once; later events of
        // a burst still share a write.
        res.socket?.uncork();
      }
      if (!flowing) await drained(res, options.signal);
    }
    if (!options.signal.aborted && options.framing === 'data') res.write('data: [DONE]\n\n');
  } catch (error) {
    // The request line reports it, with the cause when it is a server failure.
    noteError(res, toApiError(error));
    if (!options.signal.aborted) send(options.errorEvent(error, sent, last));
  } finally {
    clearImmediate(headersAlone);
    if (options.signal.aborted) await iterator.return?.();
    res.end();
  }
}

/** Back-pressure: wait until the socket takes more, or the client leaves. */
function drained(res: Response, signal: AbortSignal): Promise<void> {
  // A write to a socket that is already gone returns false and never drains.
  if (signal.aborted || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
