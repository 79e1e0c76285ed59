// Decoders of event streams (fetch streams only, no Node built-ins): server-sent events,
// and the newline-delimited JSON a stream is handed on as.

export interface ServerSentEvent {
  event: string | undefined;
  data: string;
  id: string | undefined;
}

/** Splits a byte stream into events: `event:`/`data:`/`id:` fields, `:` comments ignored. */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  for await (const text of readLines(body)) {
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
export async function* readJsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  for await (const text of readLines(body)) if (text.trim() !== '') yield { event: undefined, data: text, id: undefined };
}

/** The lines of a UTF-8 byte stream (`\n`, `\r\n` or `\r`); the last one even without a line end. */
async function* readLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
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
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
