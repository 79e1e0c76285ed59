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

/**
 * The idle timeout of a streamed answer. It counts only the server side going quiet: it
 * runs while a read waits on the server for the next chunk, and stops while the consumer
 * holds a chunk (a slow `for await` body never kills a healthy stream). Before the first
 * read it runs too, so that a stream nobody reads releases its connection.
 */
export class IdleTimer {
  /** The timeout, once it fired: what a read of the stream then fails with. */
  error: Error | undefined;
  /** Set by the stream's reader: releases a read still waiting when the timeout fires. */
  onIdle: (() => void) | undefined;
  readonly #ms: number;
  readonly #describe: (serverSide: boolean) => Error;
  readonly #expire: (error: Error) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** `describe` builds the error (server went quiet, or nobody read); `expire` aborts the request. */
  constructor(ms: number, describe: (serverSide: boolean) => Error, expire: (error: Error) => void) {
    this.#ms = ms;
    this.#describe = describe;
    this.#expire = expire;
    this.#arm(false);
  }

  /** A read now waits on the server. */
  waiting(): void {
    this.#arm(true);
  }

  /** The read is over (a chunk, the end or a failure): the consumer's time is not counted. */
  received(): void {
    clearTimeout(this.#timer);
  }

  /** The stream is over. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #arm(serverSide: boolean): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#stopped = true;
      this.error = this.#describe(serverSide);
      this.#expire(this.error);
      this.onIdle?.();
    }, this.#ms);
  }
}
