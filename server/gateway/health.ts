// Passive health per deployment: a circuit breaker fed by every upstream call (errors,
// timeouts, slow answers), plus in-flight counts for least-loaded choice, the pause an
// upstream asks for with Retry-After, and what the background probes found.
//
//   closed ──(failure_threshold failures in a row, or half of the last 10 calls)──▶ open
//   open ──(next trial due: circuit-trials.ts makes a minimal real call)──▶ half-open
//   open ──(cooldown)──▶ half-open: the next request is the trial
//   half-open: one trial; success ▶ closed, failure ▶ open again (the trial wait and the
//   cooldown double, ≤ trial_max_ms and ≤ 8×); a trial that says nothing (the client left,
//   a 429) ▶ open, ready for another
//
// Trial calls come on a short jittered schedule (trial_ms, doubling to trial_max_ms), so
// traffic returns seconds after the upstream heals, one small call at a time.
//
// State changes are published to peers (Redis, see shared-health.ts) so every instance
// sees an outage; a peer's report opens (or closes) the circuit here too. A Retry-After
// pause is the deployment's own business and is not shared.
import type { Catalog } from './catalog.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

interface DeploymentState {
  circuit: CircuitState;
  consecutiveFailures: number;
  /** Outcomes of the last WINDOW calls (true: failed), oldest first: catches a flapping upstream. */
  recent: boolean[];
  /** An open circuit refuses traffic until then (ms since epoch), then admits one trial. */
  openUntil: number;
  /** An upstream Retry-After: no traffic until then, whatever the circuit. */
  pausedUntil: number;
  /** How many cooldowns in a row: the next one lasts cooldown × 2^(n-1), at most 8×. */
  trips: number;
  /** A half-open trial is running: no second one. */
  trialInFlight: boolean;
  /** When an open circuit's next trial call is due (ms since epoch; 0: none). */
  nextTrialAt: number;
  /** Trials failed since the circuit opened: each doubles the wait for the next. */
  trialFailures: number;
  inFlight: number;
  lastChange: number;
  lastError: string | null;
  latencyEwmaMs: number | null;
  /** The last background probe of the deployment's provider: when, and what it found. */
  lastProbe: { at: number; error: string | null } | null;
}

/** Calls the failure rate (config `circuit.failure_rate`) looks at, and the fewest it judges. */
const WINDOW = 10;
const WINDOW_MIN_CALLS = 6;

export interface CircuitEvent {
  deploymentId: string;
  circuit: CircuitState;
  blockedUntil: number;
}

/** How one call ended, as health judges it. */
export type HealthOutcome = { ok: true; latencyMs: number } | { ok: false; error: string; countsAsFailure: boolean; retryAfterMs?: number };

/** How a trial call ended: the upstream answered it (ok), or not. */
export type TrialOutcome = { ok: true } | { ok: false; error: string; retryAfterMs?: number };

export class DeploymentHealth {
  private readonly states = new Map<string, DeploymentState>();
  private readonly listeners: ((event: CircuitEvent) => void)[] = [];
  private readonly trialListeners: ((deploymentId: string, at: number) => void)[] = [];

  constructor(
    private catalog: Catalog,
    private readonly now: () => number = Date.now,
  ) {
    this.reconfigure(catalog);
  }

  /**
   * Takes a reloaded catalog's settings (circuit thresholds, deployments' weights and limits);
   * a deployment it keeps keeps its state (circuit, in flight), a new one starts closed.
   */
  reconfigure(catalog: Catalog): void {
    this.catalog = catalog;
    const now = this.now;
    for (const id of catalog.deployments.keys()) {
      if (this.states.has(id)) continue;
      this.states.set(id, {
        circuit: 'closed',
        consecutiveFailures: 0,
        recent: [],
        openUntil: 0,
        pausedUntil: 0,
        trips: 0,
        trialInFlight: false,
        nextTrialAt: 0,
        trialFailures: 0,
        inFlight: 0,
        lastChange: now(),
        lastError: null,
        latencyEwmaMs: null,
        lastProbe: null,
      });
    }
  }

  /** Called on every local circuit change (to publish it to peers, metrics). */
  onChange(listener: (event: CircuitEvent) => void): void {
    this.listeners.push(listener);
  }

  /** Called whenever an open circuit's next trial call is scheduled (circuit-trials.ts runs it). */
  onTrialScheduled(listener: (deploymentId: string, at: number) => void): void {
    this.trialListeners.push(listener);
  }

  private state(deploymentId: string): DeploymentState {
    const state = this.states.get(deploymentId);
    if (!state) throw new Error(`unknown deployment ${deploymentId}`);
    return state;
  }

  /** Whether a call may go to this deployment now (an open circuit past its cooldown admits one trial). */
  available(deploymentId: string): boolean {
    const s = this.state(deploymentId);
    if (s.inFlight >= this.catalog.deployments.get(deploymentId)!.max_concurrent) return false;
    const now = this.now();
    if (now < s.pausedUntil) return false;
    if (s.circuit === 'closed') return true;
    return now >= s.openUntil && !s.trialInFlight;
  }

  circuit(deploymentId: string): CircuitState {
    const s = this.state(deploymentId);
    return s.circuit === 'open' && this.now() >= s.openUntil ? 'half_open' : s.circuit;
  }

  /** Calls in flight per unit of weight: lower is less loaded. */
  load(deploymentId: string): number {
    return this.state(deploymentId).inFlight / this.catalog.deployments.get(deploymentId)!.weight;
  }

  /** How long the deployment's Retry-After pause still lasts (0: none). */
  pauseLeft(deploymentId: string): number {
    return Math.max(0, this.state(deploymentId).pausedUntil - this.now());
  }

  /** Marks a call as started; the returned function ends it with its outcome (once). */
  begin(deploymentId: string): (outcome: HealthOutcome) => void {
    const s = this.state(deploymentId);
    s.inFlight++;
    const trial = s.circuit !== 'closed';
    if (trial) {
      s.circuit = 'half_open';
      s.trialInFlight = true;
    }
    let ended = false;
    return (outcome) => {
      if (ended) return;
      ended = true;
      s.inFlight--;
      if (trial) s.trialInFlight = false;
      if (outcome.ok) {
        s.latencyEwmaMs = s.latencyEwmaMs === null ? outcome.latencyMs : s.latencyEwmaMs * 0.8 + outcome.latencyMs * 0.2;
        if (outcome.latencyMs >= this.catalog.circuit.slow_ms) return this.failure(deploymentId, s, 'slow answer');
        record(s, false);
        s.consecutiveFailures = 0;
        if (s.circuit !== 'closed') this.transition(deploymentId, s, 'closed', 0);
        s.trips = 0;
        return;
      }
      s.lastError = outcome.error;
      if (outcome.retryAfterMs) {
        // A Retry-After of hours would take the deployment out for hours: a cooldown at most.
        s.pausedUntil = Math.max(s.pausedUntil, this.now() + Math.min(outcome.retryAfterMs, this.catalog.circuit.cooldown_ms));
      }
      if (outcome.countsAsFailure) this.failure(deploymentId, s, outcome.error);
      // Neither success nor failure proves the deployment well: the circuit stays open
      // (its cooldown already over, so the next call is another trial), its trial calls go on.
      else if (trial && s.circuit === 'half_open') {
        s.circuit = 'open';
        if (s.nextTrialAt <= this.now()) this.scheduleTrial(deploymentId, s);
      }
    };
  }

  /** When an open circuit's next trial call is due; null when none is pending (closed, or a trial is running). */
  trialAt(deploymentId: string): number | null {
    const s = this.state(deploymentId);
    return s.circuit === 'open' && !s.trialInFlight && s.nextTrialAt > 0 ? s.nextTrialAt : null;
  }

  /** Another instance runs this trial: this one's next comes a wait later (not counted as failed). */
  deferTrial(deploymentId: string): void {
    this.scheduleTrial(deploymentId, this.state(deploymentId));
  }

  /**
   * Starts a due trial call: the circuit is half-open (no traffic) until it ends. A trial
   * the upstream answers closes the circuit; one that fails keeps it open, the next trial
   * a longer wait away (at least its Retry-After).
   */
  beginTrial(deploymentId: string): (outcome: TrialOutcome) => void {
    const s = this.state(deploymentId);
    s.trialInFlight = true;
    s.circuit = 'half_open';
    return (outcome) => {
      s.trialInFlight = false;
      // A peer's trial or a live request closed it meanwhile.
      if (s.circuit === 'closed') return;
      if (outcome.ok) {
        s.consecutiveFailures = 0;
        s.recent = [];
        s.trips = 0;
        this.transition(deploymentId, s, 'closed', 0);
        return;
      }
      s.lastError = outcome.error;
      s.circuit = 'open';
      s.trialFailures++;
      this.scheduleTrial(deploymentId, s, outcome.retryAfterMs);
    };
  }

  /** The next trial call: trial_ms doubled per failed trial up to trial_max_ms, jittered to half-to-all of it. */
  private scheduleTrial(deploymentId: string, s: DeploymentState, retryAfterMs = 0): void {
    const { trial_ms: base, trial_max_ms: max } = this.catalog.circuit;
    if (base === 0) return;
    const wait = Math.min(base * 2 ** s.trialFailures, max) * (0.5 + Math.random() * 0.5);
    s.nextTrialAt = this.now() + Math.ceil(Math.max(wait, Math.min(retryAfterMs, max)));
    for (const listener of this.trialListeners) listener(deploymentId, s.nextTrialAt);
  }

  private failure(deploymentId: string, s: DeploymentState, reason: string): void {
    s.lastError = reason;
    s.consecutiveFailures++;
    record(s, true);
    const failed = s.recent.filter(Boolean).length;
    const rate = this.catalog.circuit.failure_rate;
    const flapping = rate !== null && s.recent.length >= WINDOW_MIN_CALLS && failed / s.recent.length >= rate;
    if (s.circuit !== 'closed' || s.consecutiveFailures >= this.catalog.circuit.failure_threshold || flapping) {
      s.trips++;
      s.recent = [];
      const cooldown = this.catalog.circuit.cooldown_ms * Math.min(8, 2 ** (s.trips - 1));
      this.transition(deploymentId, s, 'open', this.now() + cooldown);
    }
  }

  private transition(deploymentId: string, s: DeploymentState, circuit: CircuitState, openUntil: number): void {
    const was = s.circuit;
    s.circuit = circuit;
    s.openUntil = openUntil;
    s.lastChange = this.now();
    this.trialsAfter(deploymentId, s, was);
    for (const listener of this.listeners) listener({ deploymentId, circuit, blockedUntil: openUntil });
  }

  /**
   * Trial calls follow the circuit: none while closed; the first soon after it opens; a
   * longer wait after a failed trial request; unchanged when a call that was already under
   * way fails after it opened.
   */
  private trialsAfter(deploymentId: string, s: DeploymentState, was: CircuitState): void {
    if (s.circuit === 'closed') {
      s.nextTrialAt = 0;
      s.trialFailures = 0;
      return;
    }
    // A trial call is running (a late failure of a call from before it opened): its end schedules the next.
    if (s.trialInFlight) return;
    if (was === 'closed') s.trialFailures = 0;
    else if (was === 'half_open') s.trialFailures++;
    else if (s.nextTrialAt > 0) return;
    this.scheduleTrial(deploymentId, s);
  }

  /** A peer instance saw this deployment change: take its view without re-publishing it. */
  applyPeerEvent(event: CircuitEvent): void {
    const s = this.states.get(event.deploymentId);
    if (!s) return;
    const was = s.circuit;
    s.circuit = event.circuit === 'half_open' ? 'open' : event.circuit;
    s.openUntil = event.circuit === 'closed' ? 0 : Math.max(s.openUntil, event.blockedUntil);
    if (event.circuit === 'closed') s.consecutiveFailures = 0;
    s.lastChange = this.now();
    // Every instance schedules trials; a shared gate lets one of them make each (shared-health.ts).
    if (s.circuit === 'closed' || was === 'closed') this.trialsAfter(event.deploymentId, s, was);
  }

  /**
   * A background probe of the deployment's provider ended. `error`: what failed, for an
   * upstream that is down or refuses the platform's key (null: it answered). It only tells
   * the health report: an overloaded upstream still answers GET /models, so an open circuit
   * waits for a trial call instead.
   */
  probed(deploymentId: string, error: string | null): void {
    this.state(deploymentId).lastProbe = { at: this.now(), error };
  }

  snapshot(deploymentId: string) {
    const s = this.state(deploymentId);
    const circuit = this.circuit(deploymentId);
    return {
      circuit,
      consecutiveFailures: s.consecutiveFailures,
      inFlight: s.inFlight,
      lastChange: s.lastChange,
      lastError: s.lastError,
      latencyEwmaMs: s.latencyEwmaMs,
      lastProbe: s.lastProbe,
      /** When the next trial is due: a trial call, else (no trial calls) the end of the cooldown; null while closed. */
      nextTrialAt: circuit === 'closed' ? null : this.catalog.circuit.trial_ms > 0 ? s.nextTrialAt : s.openUntil,
    };
  }
}

function record(s: DeploymentState, failed: boolean): void {
  s.recent.push(failed);
  if (s.recent.length > WINDOW) s.recent.shift();
}
