// Idempotency keys: sent on creating POSTs so that a retry after a lost answer cannot
// create (or bill) the same thing twice. One key per call, reused by all its attempts.

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
