// A request's usage scope: whoever meters a request (billing's admission stage) opens one
// (AsyncLocalStorage), and the gateway reports into it every upstream call it makes for
// that request (`trackUsage` in gateway-service.ts). When the response closes, the meter
// waits for the calls to be final (a stream left by its client settles its attempt with an
// estimate of what was produced) and bills them.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Usage } from '../providers/types.js';

/** One upstream call as the gateway records it (structurally its `Attempt`). */
export interface MeteredAttempt {
  deploymentId: string;
  modelId: string;
  outcome: string;
  usage?: Usage;
  /** Images drawn (the image_generation tool), priced per image. */
  images?: number;
}

interface TrackedCall {
  attempts: readonly MeteredAttempt[];
  done: Promise<void>;
}

export class UsageScope {
  private readonly calls: TrackedCall[] = [];

  /** Registers a call's attempts; the returned function says they are final. */
  track(attempts: readonly MeteredAttempt[]): () => void {
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    this.calls.push({ attempts, done });
    return finish;
  }

  /**
   * Every call's attempts, once final or after `timeoutMs` (a stream nobody iterates never
   * finishes): each inner list is one call, its attempts in order.
   */
  async settled(timeoutMs: number): Promise<MeteredAttempt[][]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([Promise.all(this.calls.map((c) => c.done)), timeout]);
    clearTimeout(timer);
    return this.calls.map((c) => [...c.attempts]);
  }
}

const storage = new AsyncLocalStorage<UsageScope>();

export function runInUsageScope<T>(scope: UsageScope, fn: () => T): T {
  return storage.run(scope, fn);
}

const nothing = () => undefined;

/** The gateway's hook: no-op outside a metered request (tests, probes, ingestion). */
export function trackUsage(attempts: readonly MeteredAttempt[]): () => void {
  return storage.getStore()?.track(attempts) ?? nothing;
}
