// Passive health per deployment: a circuit breaker fed by every upstream call (errors,
// timeouts, slow answers), plus in-flight counts for least-loaded choice and the cooldown
// an upstream asks for with Retry-After.
//
//   closed ──(failure_threshold failures in a row, or half of the last 10 calls)──▶ open
//   open ──(cooldown)──▶ half-open
//   half-open: one trial call; success ▶ closed, failure ▶ open again (cooldown doubles, ≤ 8×)
//
// State changes are published to peers (Redis, see shared-health.ts) so every instance
// sees an outage; a peer's report opens the circuit here too.
import type { Catalog } from './catalog.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

interface DeploymentState {
  circuit: CircuitState;
  consecutiveFailures: number;
  /** Outcomes of the last WINDOW calls (true: failed), oldest first: catches a flapping upstream. */
  recent: boolean[];
  /** Open until then (ms since epoch); also a Retry-After cooldown on a closed circuit. */
  blockedUntil: number;
  /** How many cooldowns in a row: the next one lasts cooldown × 2^(n-1), at most 8×. */
  trips: number;
  /** A half-open trial is running: no second one. */
  trialInFlight: boolean;
  inFlight: number;
  lastChange: number;
  lastError: string | null;
  latencyEwmaMs: number | null;
}

/** Calls the failure rate (config `circuit.failure_rate`) looks at, and the fewest it judges. */
const WINDOW = 10;
const WINDOW_MIN_CALLS = 6;

export interface CircuitEvent {
  deploymentId: string;
  circuit: CircuitState;
  blockedUntil: number;
}

export class DeploymentHealth {
  private readonly states = new Map<string, DeploymentState>();
  private readonly listeners: ((event: CircuitEvent) => void)[] = [];

  constructor(
    private readonly catalog: Catalog,
    private readonly now: () => number = Date.now,
  ) {
    for (const id of catalog.deployments.keys()) {
      this.states.set(id, {
        circuit: 'closed',
        consecutiveFailures: 0,
        recent: [],
        blockedUntil: 0,
        trips: 0,
        trialInFlight: false,
        inFlight: 0,
        lastChange: now(),
        lastError: null,
        latencyEwmaMs: null,
      });
    }
  }

  /** Called on every local circuit change (to publish it to peers, metrics). */
  onChange(listener: (event: CircuitEvent) => void): void {
    this.listeners.push(listener);
  }

  private state(deploymentId: string): DeploymentState {
    const state = this.states.get(deploymentId);
    if (!state) throw new Error(`unknown deployment ${deploymentId}`);
    return state;
  }

  /** Whether a call may go to this deployment now (an open circuit past its cooldown admits one trial). */
  available(deploymentId: string): boolean {
    const s = this.state(deploymentId);
    const deployment = this.catalog.deployments.get(deploymentId)!;
    if (s.inFlight >= deployment.max_concurrent) return false;
    if (this.now() < s.blockedUntil) return false;
    if (s.circuit === 'closed') return true;
    return !s.trialInFlight;
  }

  circuit(deploymentId: string): CircuitState {
    const s = this.state(deploymentId);
    return s.circuit === 'open' && this.now() >= s.blockedUntil ? 'half_open' : s.circuit;
  }

  /** weight / (1 + in flight): higher is better. */
  score(deploymentId: string): number {
    return this.catalog.deployments.get(deploymentId)!.weight / (1 + this.state(deploymentId).inFlight);
  }

  /** Marks a call as started; the returned function ends it with its outcome. */
  begin(deploymentId: string): (outcome: { ok: true; latencyMs: number } | { ok: false; error: string; countsAsFailure: boolean; retryAfterMs?: number }) => void {
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
      if (outcome.retryAfterMs) s.blockedUntil = Math.max(s.blockedUntil, this.now() + outcome.retryAfterMs);
      if (outcome.countsAsFailure) this.failure(deploymentId, s, outcome.error);
      else if (trial) this.transition(deploymentId, s, 'closed', s.blockedUntil);
    };
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
      this.transition(deploymentId, s, 'open', Math.max(s.blockedUntil, this.now() + cooldown));
    }
  }

  private transition(deploymentId: string, s: DeploymentState, circuit: CircuitState, blockedUntil: number): void {
    s.circuit = circuit;
    s.blockedUntil = blockedUntil;
    s.lastChange = this.now();
    for (const listener of this.listeners) listener({ deploymentId, circuit, blockedUntil });
  }

  /** A peer instance saw this deployment change: take its view without re-publishing it. */
  applyPeerEvent(event: CircuitEvent): void {
    const s = this.states.get(event.deploymentId);
    if (!s) return;
    s.circuit = event.circuit === 'half_open' ? 'open' : event.circuit;
    s.blockedUntil = event.circuit === 'closed' ? 0 : Math.max(s.blockedUntil, event.blockedUntil);
    if (event.circuit === 'closed') s.consecutiveFailures = 0;
    s.lastChange = this.now();
  }

  /** An active probe answered: an open circuit gets its half-open trial now. */
  probeSucceeded(deploymentId: string): void {
    const s = this.state(deploymentId);
    if (s.circuit === 'open') s.blockedUntil = Math.min(s.blockedUntil, this.now());
  }

  openDeployments(): string[] {
    return [...this.states].filter(([, s]) => s.circuit !== 'closed').map(([id]) => id);
  }

  snapshot(deploymentId: string) {
    const s = this.state(deploymentId);
    return { circuit: this.circuit(deploymentId), inFlight: s.inFlight, lastChange: s.lastChange, lastError: s.lastError, latencyEwmaMs: s.latencyEwmaMs };
  }
}

function record(s: DeploymentState, failed: boolean): void {
  s.recent.push(failed);
  if (s.recent.length > WINDOW) s.recent.shift();
}
