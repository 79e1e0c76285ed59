// Idempotency keys: sent on creating POSTs so that a retry after a lost answer cannot
// create (or bill) the same thing twice: the server replays the stored first answer. One
// key per call, reused by all its attempts. Streamed answers are not stored, so the
// transport never treats a streaming request as idempotent, key or not.

/** Lower case, as the transport's header records are. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

export function newIdempotencyKey(): string {
  const uuid =
    globalThis.crypto?.randomUUID?.() ??
    'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) => {
      const r = (Math.random() * 16) | 0;
      return (c === 'x' ? r : (r & 0x3) | 0x8).toString(16);
    });
  return `idem_${uuid}`;
}

/** Methods safe to send twice; any other request is, when it carries an idempotency key. */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
