// Helpers for driving the SDK under fake timers while real sockets do real I/O.
import { vi } from 'vitest';
import type { RetryEvent } from '../../../sdk/src/index.js';

/** Polls `condition` on real time (setImmediate is not faked) until it holds. */
export async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Lets pending I/O run for a few real milliseconds (fake timers untouched). */
export async function settleIo(ms = 30): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) await new Promise((resolve) => setImmediate(resolve));
}

export interface Outcome<T> {
  result?: T;
  error?: unknown;
  retries: RetryEvent[];
}

/**
 * Runs a call to its end under fake timers: each time the SDK schedules a retry (reported
 * through `onRetry`), fake time is advanced by exactly the announced delay.
 */
export async function drive<T>(start: (onRetry: (event: RetryEvent) => void) => Promise<T>): Promise<Outcome<T>> {
  const retries: RetryEvent[] = [];
  let settled = false;
  const outcome: Outcome<T> = { retries };
  start((event) => retries.push(event)).then(
    (result) => {
      outcome.result = result;
      settled = true;
    },
    (error) => {
      outcome.error = error;
      settled = true;
    },
  );
  let handled = 0;
  for (;;) {
    await until(() => settled || retries.length > handled);
    if (settled) return outcome;
    const { delayMs } = retries[handled++]!;
    await vi.advanceTimersByTimeAsync(delayMs);
  }
}

/** Gaps between consecutive request times (fake `Date.now()` under fake timers). */
export function gaps(times: number[]): number[] {
  return times.slice(1).map((t, i) => t - times[i]!);
}

export const chat = { model: 'gloo-openai-gpt-5-mini', messages: [{ role: 'user' as const, content: 'Hello' }] };
