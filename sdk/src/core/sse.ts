// Server-sent events decoder (fetch streams only, no Node built-ins).

export interface ServerSentEvent {
  event: string | undefined;
  data: string;
  id: string | undefined;
}

/** Splits a byte stream into events: `event:`/`data:`/`id:` fields, `:` comments ignored. */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  let finished = false;

  const line = (text: string): ServerSentEvent | undefined => {
    if (text === '') {
      const out = data.length ? { event, data: data.join('\n'), id } : undefined;
      data = [];
      event = undefined;
      return out;
    }
    if (text.startsWith(':')) return undefined;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    return undefined;
  };

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
        const out = line(buffer.slice(0, end));
        buffer = buffer.slice(end + width);
        if (out) yield out;
      }
      if (done) {
        const out = line(buffer) ?? line('');
        buffer = '';
        if (out) yield out;
        finished = true;
        return;
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
