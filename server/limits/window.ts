// Per-minute quotas as sliding windows of one-second buckets: a counter admits a cost while
// the buckets of the last 60 seconds plus the cost stay within its limit. Unlike a fixed
// window, a burst straddling a minute boundary cannot get twice the limit. Several counters
// (per key, per organization; requests, tokens) are taken all or nothing. The same
// algorithm runs in Redis (redis-window.ts, shared by every instance) and here in process.

export const WINDOW_SECONDS = 60;

export interface Counter {
  key: string;
  limit: number;
  /** What this request takes from it: 1 request, or its token estimate. */
  cost: number;
}

export type Decision =
  | { allowed: true }
  | {
      allowed: false;
      /** Index of the counter that refused. */
      index: number;
      limit: number;
      /** Seconds until the refused cost would fit (at most the window). */
      retryAfterS: number;
      /** Seconds until the counter's window is empty again. */
      resetS: number;
    };

export interface WindowStore {
  take(counters: readonly Counter[]): Promise<Decision>;
}

/**
 * Why a counter refuses, from its live buckets (second → amount, all within the window):
 * the retry is when enough of the oldest buckets have left for the cost to fit (the whole
 * window for a cost above the limit, which never fits); the reset is when the newest leaves.
 */
export function refusal(buckets: [number, number][], now: number, cost: number, limit: number, index: number): Decision {
  buckets.sort((a, b) => a[0] - b[0]);
  const used = buckets.reduce((sum, [, n]) => sum + n, 0);
  let retryAfterS = WINDOW_SECONDS;
  if (cost <= limit) {
    let freed = 0;
    for (const [second, n] of buckets) {
      freed += n;
      if (used - freed + cost <= limit) {
        retryAfterS = second + WINDOW_SECONDS - now;
        break;
      }
    }
  }
  const newest = buckets.length > 0 ? buckets[buckets.length - 1][0] : now;
  return { allowed: false, index, limit, retryAfterS, resetS: Math.max(retryAfterS, newest + WINDOW_SECONDS - now) };
}

/** The in-process store: alone, or while Redis is unreachable (then each instance counts for itself). */
export class LocalWindows implements WindowStore {
  private readonly counters = new Map<string, Map<number, number>>();

  constructor(private readonly clock: () => number = Date.now) {}

  async take(counters: readonly Counter[]): Promise<Decision> {
    const now = Math.floor(this.clock() / 1000);
    const oldest = now - WINDOW_SECONDS + 1;
    for (const [index, counter] of counters.entries()) {
      const buckets = this.live(counter.key, oldest);
      const used = [...buckets.values()].reduce((sum, n) => sum + n, 0);
      if (used + counter.cost > counter.limit) return refusal([...buckets.entries()], now, counter.cost, counter.limit, index);
    }
    for (const counter of counters) {
      const buckets = this.counters.get(counter.key) ?? new Map<number, number>();
      buckets.set(now, (buckets.get(now) ?? 0) + counter.cost);
      this.counters.set(counter.key, buckets);
    }
    return { allowed: true };
  }

  /** Forgets counters with nothing left in the window (run periodically: memory stays bounded). */
  sweep(): void {
    const oldest = Math.floor(this.clock() / 1000) - WINDOW_SECONDS + 1;
    for (const key of [...this.counters.keys()]) {
      if (this.live(key, oldest).size === 0) this.counters.delete(key);
    }
  }

  get size(): number {
    return this.counters.size;
  }

  private live(key: string, oldest: number): Map<number, number> {
    const buckets = this.counters.get(key);
    if (!buckets) return new Map();
    for (const second of buckets.keys()) if (second < oldest) buckets.delete(second);
    return buckets;
  }
}
