// Idempotency keys: sent on creating POSTs so that a retry after a lost answer cannot
// create (or bill) the same thing twice: the server replays the stored first answer. One
// key per call, reused by all its attempts. Streamed answers are not stored, so the
// transport never treats a streaming request as idempotent, key or not.

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

export function newIdempotencyKey(): string {
  const uuid =
    globalThis.crypto?.randomUUID?.() ??
    'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) => {
      const r = (Math.random() * 16) | 0;
      return (c === 'x' ? r : (r & 0x3) | 0x8).toString(16);
    });
  return `idem_${uuid}`;
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Safe to send twice: an idempotent method, or a request carrying an idempotency key. */
export function isIdempotent(method: string, headers: Headers): boolean {
  return IDEMPOTENT_METHODS.has(method.toUpperCase()) || headers.has(IDEMPOTENCY_HEADER);
}
