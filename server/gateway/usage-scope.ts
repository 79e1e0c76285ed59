// A request's usage scope: whoever meters a request (billing's admission stage) opens one and
// hands it to the handler (`RequestContext.meter`), which passes it with every gateway call of
// the request (`CallScope.meter` in gateway-service.ts); the gateway reports each upstream call
// into it. When the response closes, the meter waits for the calls to be final (a stream left
// by its client settles its attempt with an estimate of what was produced) and bills them.
// Passed explicitly rather than through AsyncLocalStorage: on Node 20 an active store installs
// promise hooks that every promise of the process pays for.
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

/** What the gateway reports into: a call's attempts, and a function that says they are final. */
export interface UsageMeter {
  track(attempts: readonly MeteredAttempt[]): () => void;
}

interface TrackedCall {
  attempts: readonly MeteredAttempt[];
  done: Promise<void>;
}

export class UsageScope implements UsageMeter {
  private readonly calls: TrackedCall[] = [];

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

const nothing = () => undefined;

/** The gateway's hook: a no-op for a call nobody meters (tests, probes, ingestion). */
export function trackUsage(meter: UsageMeter | null, attempts: readonly MeteredAttempt[]): () => void {
  return meter?.track(attempts) ?? nothing;
}
