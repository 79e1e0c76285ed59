// Timeouts and cancellation: the caller's AbortSignal, the per-attempt timeout and the
// SDK's own abort (a stream the caller stopped reading) merged into one signal.

export class TimeoutReason extends Error {
  override name = 'TimeoutError';
}

export interface LinkedSignal {
  signal: AbortSignal;
  abort(reason?: unknown): void;
  /** Detaches from the source signals (call when the request is over). */
  dispose(): void;
}

/** A signal aborted as soon as any source is (AbortSignal.any without needing Node 20.3+). */
export function linkSignals(...sources: Array<AbortSignal | undefined>): LinkedSignal {
  const controller = new AbortController();
  const detach: Array<() => void> = [];
  for (const source of sources) {
    if (!source) continue;
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const onAbort = () => controller.abort(source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    detach.push(() => source.removeEventListener('abort', onAbort));
  }
  return {
    signal: controller.signal,
    abort: (reason?: unknown) => controller.abort(reason),
    dispose: () => detach.splice(0).forEach((fn) => fn()),
  };
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
