// One request's way through its route plan, one upstream attempt at a time: the plan's
// models (model_family: all of them competing), then their `fallbacks`, one model after
// the other. Among one model's deployments a failure moves on at once (another deployment
// of the same model is as good an answer). Before leaving a model, the deployment that
// failed last is tried once more: at once after a transient 5xx or a reset, or after
// waiting out an upstream Retry-After up to the cap (a timeout is not retried: a second
// wait as long would double the caller's). A refusal that any deployment would repeat (a
// bad request, the platform's key refused) ends the walk; a context-length or content-filter
// refusal moves on to the refused model's context-window or content-policy fallbacks when
// it has any, and ends it otherwise.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../errors.js';
import { ProviderError, type ProviderErrorKind } from '../providers/types.js';
import type { Catalog, ModelConfig, Served } from './catalog.js';
import { kindFacts, toCallerError } from './upstream-failures.js';
import type { DeploymentHealth } from './health.js';
import { refusalFallbacks, type RoutePlan } from './routing.js';

/** A model's deployment as a routing candidate (built once per catalog). */
export interface Candidate {
  model: ModelConfig;
  deployment: Served['deployment'];
  served: Served;
}

/** How one model is retried before it is left (config `failover`, a model's or a route's own). */
export interface RetryPolicy {
  retries: number;
  retryAfterCapMs: number;
}

export interface WalkOptions {
  /** Only these candidates (a stream's resume skips the deployments whose stream broke). */
  filter?: (c: Candidate) => boolean;
  /** Whether a failure is to be repeated at once on the same deployment in another form (a refused assistant prefix, asked in a user turn instead). */
  tryAgain?: (c: Candidate, error: unknown) => boolean;
}

/** A 5xx or a connection lost: the same deployment may well answer a moment later. */
const TRANSIENT: ReadonlySet<ProviderErrorKind> = new Set(['server', 'unavailable', 'connection_dropped']);

export class RouteWalk {
  /** Models tried together, in order; refusal fallbacks are inserted after the current one. */
  private readonly stages: ModelConfig[][];
  private stage = 0;
  private readonly tried = new Set<string>();
  private readonly retries = new Map<string, number>();
  /** The last failure in the current stage: what a retry before leaving it repeats. */
  private lastInStage: { candidate: Candidate; error: ProviderError } | null = null;
  private again: Candidate | null = null;
  /** The walk's last failure: what the caller gets when nothing is left. */
  private last: unknown = null;

  constructor(
    private readonly catalog: Catalog,
    private readonly candidates: ReadonlyMap<string, readonly Candidate[]>,
    private readonly health: DeploymentHealth,
    private readonly plan: RoutePlan,
    private readonly policy: (model: ModelConfig) => RetryPolicy,
    private readonly options: WalkOptions = {},
  ) {
    this.stages = plan.mechanism === 'model_family' ? [plan.models] : plan.models.map((m) => [m]);
    for (const m of plan.fallbacks) this.stages.push([m]);
  }

  /**
   * The next deployment to call, after any pause it asked for; null when the route is spent
   * (or the client left). `attemptsLeft`: the calls the request may still make.
   */
  async next(signal: AbortSignal, attemptsLeft: number): Promise<Candidate | null> {
    if (this.again) {
      const candidate = this.again;
      this.again = null;
      return candidate;
    }
    while (this.stage < this.stages.length && !signal.aborted) {
      const candidate = this.pick(this.stages[this.stage]);
      if (candidate) {
        this.tried.add(candidate.deployment.id);
        return candidate;
      }
      // The last call the request may make goes to the next model rather than to a retry.
      const retry = attemptsLeft > 1 || this.stage + 1 === this.stages.length ? await this.retry(signal) : null;
      if (retry) return retry;
      this.stage++;
      this.lastInStage = null;
    }
    return null;
  }

  /** Records a failed attempt; throws the caller's error when nothing may follow it. */
  failed(candidate: Candidate, error: unknown): void {
    this.last = error;
    if (this.options.tryAgain?.(candidate, error)) {
      this.again = candidate;
      return;
    }
    const facts = kindFacts(error);
    if (facts.failover) {
      this.lastInStage = { candidate, error: error as ProviderError };
      return;
    }
    if (facts.kind === 'context_length' || facts.kind === 'content_filter') {
      const passed = new Set(this.stages.slice(0, this.stage + 1).flat());
      const next = refusalFallbacks(this.catalog, candidate.model, facts.kind, this.plan).filter((m) => !passed.has(m));
      if (next.length > 0) {
        // The other deployments of the refused model would refuse it too: straight to the fallbacks.
        this.stages.splice(this.stage + 1, 0, ...next.map((m) => [m]));
        this.stage++;
        this.lastInStage = null;
        return;
      }
    }
    throw toCallerError(error);
  }

  /** What the caller gets when the route is spent: the last upstream failure, else 503. */
  exhausted(): ApiError {
    if (this.last) return toCallerError(this.last);
    const models = this.stages.flat().map((m) => m.id);
    return new ApiError('PROVIDER_UNAVAILABLE', `No healthy deployment can serve ${[...new Set(models)].join(', ')} right now.`);
  }

  private eligible(c: Candidate): boolean {
    return !this.tried.has(c.deployment.id) && this.health.available(c.deployment.id) && (this.options.filter === undefined || this.options.filter(c));
  }

  /**
   * Among the stage's healthy, untried deployments of the lowest `order`, the least loaded
   * (in flight per unit of weight) compete: one is drawn at random by weight, so that
   * sequential traffic spreads by weight too.
   */
  private pick(models: readonly ModelConfig[]): Candidate | null {
    let order = Infinity;
    let least = Infinity;
    let total = 0;
    for (const model of models) {
      for (const c of this.candidates.get(model.id)!) {
        if (c.deployment.order > order || !this.eligible(c)) continue;
        const load = this.health.load(c.deployment.id);
        if (c.deployment.order < order || load < least) {
          order = c.deployment.order;
          least = load;
          total = c.deployment.weight;
        } else if (load === least) total += c.deployment.weight;
      }
    }
    if (total === 0) return null;
    let draw = Math.random() * total;
    let last: Candidate | null = null;
    for (const model of models) {
      for (const c of this.candidates.get(model.id)!) {
        if (c.deployment.order !== order || !this.eligible(c) || this.health.load(c.deployment.id) !== least) continue;
        last = c;
        draw -= c.deployment.weight;
        if (draw < 0) return c;
      }
    }
    return last;
  }

  /** The deployment that failed last in this stage, once more before the stage is left, when its failure allows it. */
  private async retry(signal: AbortSignal): Promise<Candidate | null> {
    if (!this.lastInStage) return null;
    const { candidate, error } = this.lastInStage;
    const id = candidate.deployment.id;
    const done = this.retries.get(id) ?? 0;
    const policy = this.policy(candidate.model);
    if (error.kind === 'rate_limit') {
      const wait = error.details.retryAfterMs;
      if (done > 0 || wait === undefined || wait > policy.retryAfterCapMs) return null;
      // By the health clock, which a timer may beat by a millisecond.
      for (let left = wait; left > 0 && !signal.aborted; left = this.health.pauseLeft(id)) {
        await sleep(left, undefined, { signal }).catch(() => undefined);
      }
    } else if (!TRANSIENT.has(error.kind) || done >= policy.retries) {
      return null;
    }
    // The failure may have opened its circuit: then it is left alone.
    if (signal.aborted || !this.health.available(id)) return null;
    this.retries.set(id, done + 1);
    this.lastInStage = null;
    return candidate;
  }
}
