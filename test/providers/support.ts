// Helpers shared by the HTTP adapter suites.
import { expect } from 'vitest';
import { ProviderError, type CallContext, type ChatStreamEvent } from '../../server/providers/types.js';

/** Short timeouts: the fakes answer in milliseconds. */
export const ctx = (signal = new AbortController().signal): CallContext => ({ signal, timeouts: { connectMs: 200, firstTokenMs: 200, idleMs: 200 } });

export async function collect(events: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const out: ChatStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** The ProviderError a call fails with (the test fails if it succeeds or throws something else). */
export async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}
