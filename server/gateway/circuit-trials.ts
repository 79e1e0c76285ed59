// Recovery in seconds: an open circuit is tried with a minimal real call when its trial is
// due (health.ts schedules it: soon after the circuit opened, then a doubling, jittered wait
// up to trial_max_ms), so traffic returns within seconds of the upstream healing. The call
// is the deployment's `probe` (a one-token answer, or an embedding of a word): a real
// request, which an overloaded upstream refuses, where GET /models would still answer. One
// trial at a time per deployment; with REDIS_URL one instance in all takes each trial slot.
import type { Logger } from 'pino';
import { ProviderError, type CallContext, type Provider } from '../providers/types.js';
import type { Catalog } from './catalog.js';
import { failureSummary, kindFacts } from './upstream-failures.js';
import type { DeploymentHealth, TrialOutcome } from './health.js';

/** Whether this instance makes a deployment's trial call now (shared-health.ts: one instance per slot of `slotMs`). */
export type TrialGate = (deploymentId: string, slotMs: number) => Promise<boolean>;

export const everyInstance: TrialGate = async () => true;

export class CircuitTrials {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Deployments of embedding models: their trial embeds the probe prompt. */
  private readonly embedding = new Set<string>();
  private stopped = false;

  constructor(
    private readonly catalog: Catalog,
    private readonly providers: ReadonlyMap<string, Provider>,
    private readonly health: DeploymentHealth,
    private readonly gate: TrialGate,
    private readonly logger: Logger,
  ) {
    for (const model of catalog.models.values()) if (model.type === 'embedding') for (const id of model.deployments) this.embedding.add(id);
    health.onTrialScheduled((id, at) => this.schedule(id, at));
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private schedule(deploymentId: string, at: number): void {
    clearTimeout(this.timers.get(deploymentId));
    if (this.stopped) return;
    const timer = setTimeout(() => void this.run(deploymentId), Math.max(0, at - Date.now()));
    timer.unref();
    this.timers.set(deploymentId, timer);
  }

  private async run(deploymentId: string): Promise<void> {
    this.timers.delete(deploymentId);
    // Closed meanwhile, or a request is on trial (its end schedules the next).
    const at = this.health.trialAt(deploymentId);
    if (this.stopped || at === null) return;
    // A timer may fire a millisecond before the health clock says.
    if (at > Date.now()) return this.schedule(deploymentId, at);
    if (!(await this.gate(deploymentId, this.catalog.circuit.trial_ms))) return this.health.deferTrial(deploymentId);
    const end = this.health.beginTrial(deploymentId);
    end(await this.call(deploymentId));
  }

  private async call(deploymentId: string): Promise<TrialOutcome> {
    const deployment = this.catalog.deployments.get(deploymentId)!;
    const provider = this.providers.get(deployment.provider)!;
    const ms = this.catalog.circuit.trial_timeout_ms;
    const ctx: CallContext = { signal: AbortSignal.timeout(ms), timeouts: { connectMs: Math.min(ms, this.catalog.timeouts.connect_ms), firstTokenMs: ms, idleMs: ms } };
    const { prompt, max_tokens: maxTokens } = deployment.probe;
    try {
      if (this.embedding.has(deploymentId)) await provider.embed({ model: deployment.model, input: [prompt] }, ctx);
      else await provider.chat({ model: deployment.model, messages: [{ role: 'user', content: prompt }], maxTokens }, ctx);
      return { ok: true };
    } catch (error) {
      const facts = kindFacts(error);
      // It answered, refusing the request itself (a 400): up and not overloaded, though its `probe` wants setting.
      if (facts.kind !== null && !facts.unhealthy && facts.kind !== 'rate_limit') {
        this.logger.warn({ deployment: deploymentId, err: (error as Error).message }, 'the trial call was refused as a request: set the deployment\'s probe');
        return { ok: true };
      }
      return { ok: false, error: failureSummary(error), retryAfterMs: error instanceof ProviderError ? error.details.retryAfterMs : undefined };
    }
  }
}
