// Decoders of event streams (fetch streams only, no Node built-ins): server-sent events,
// and the newline-delimited JSON a stream is handed on as.
import type { IdleTimer } from './timeouts.js';

/** How a body is read. */
export interface Reading {
  /** The stream's idle timeout, told when a read waits on the server and when it is over. */
  idle?: IdleTimer | undefined;
  /**
   * Set by the consumer before it stops early because the answer is complete (`[DONE]`):
   * the rest of the body is then read to its end in the background instead of cancelled,
   * so the connection is kept for the next request.
   */
  complete?: boolean;
}

export interface ServerSentEvent {
  event: string | undefined;
  data: string;
  id: string | undefined;
}

/** Splits a byte stream into events: `event:`/`data:`/`id:` fields, `:` comments ignored. */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>, reading: Reading = {}): AsyncGenerator<ServerSentEvent> {
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  for await (const text of readLines(body, reading)) {
    if (text === '') {
      if (data.length) yield { event, data: data.join('\n'), id };
      data = [];
      event = undefined;
      continue;
    }
    if (text.startsWith(':')) continue;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
  }
  // An event the stream ended on without its blank line.
  if (data.length) yield { event, data: data.join('\n'), id };
}

/** Newline-delimited JSON (what `Stream.toReadableStream()` writes): each non-blank line is one event's data. */
export async function* readJsonLines(body: ReadableStream<Uint8Array>, reading: Reading = {}): AsyncGenerator<ServerSentEvent> {
  for await (const text of readLines(body, reading)) if (text.trim() !== '') yield { event: undefined, data: text, id: undefined };
}

/** The lines of a UTF-8 byte stream (`\n`, `\r\n` or `\r`); the last one even without a line end. */
async function* readLines(body: ReadableStream<Uint8Array>, reading: Reading): AsyncGenerator<string> {
  const reader = body.getReader();
  const { idle } = reading;
  if (idle) idle.onIdle = () => void reader.cancel().catch(() => undefined);
  const decoder = new TextDecoder();
  let buffer = '';
  let finished = false;
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      if (idle?.error) throw idle.error;
      idle?.waiting();
      try {
        chunk = await reader.read();
      } catch (error) {
        throw idle?.error ?? error;
      } finally {
        idle?.received();
      }
      // A read released by the idle timeout ends as if the body were over: it is not.
      if (idle?.error) throw idle.error;
      const { done, value } = chunk;
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        if (end === -1) break;
        // A lone `\r` at the end may be the first half of `\r\n`: wait for more bytes.
        if (buffer[end] === '\r' && end === buffer.length - 1 && !done) break;
        const width = buffer[end] === '\r' && buffer[end + 1] === '\n' ? 2 : 1;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + width);
        yield line;
      }
      if (done) {
        finished = true;
        if (buffer !== '') yield buffer;
        return;
      }
    }
  } finally {
    if (finished) {
      idle?.stop();
      reader.releaseLock();
    } else if (reading.complete) {
      void readToEnd(reader, idle);
    } else {
      idle?.stop();
      await reader.cancel().catch(() => undefined);
    }
  }
}

/** Reads what is left of a complete answer, bounded by the idle timeout. */
async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, idle: IdleTimer | undefined): Promise<void> {
  try {
    for (;;) {
      idle?.waiting();
      const { done } = await reader.read();
      if (done || idle?.error) return;
    }
  } catch {
    // the answer was complete: a failure after it changes nothing
  } finally {
    idle?.stop();
  }
}
