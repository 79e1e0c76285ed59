// Composition of the inference gateway: catalog → providers → health → service, and the
// OpenAI-shaped surfaces the handlers call. Built at start; a reload (reload.ts) swaps in a
// new catalog's providers and routing for the requests that start after it. What a reload
// does not change (a restart does): the guardrails' moderation endpoint, the response
// cache's store, and the providers' background probes, trial calls and health entries.
import type { Logger } from 'pino';
import type { components } from '../../generated/types/openapi.js';
import type { HealthService, HealthStatus } from '../health/health-service.js';
import type { Metrics } from '../observability/metrics.js';
import type { Embedder } from '../providers/local/embedder.js';
import type { Provider } from '../providers/types.js';
import type { RedisConnections } from '../storage/redis.js';
import { MemoryAnswerStore, RedisAnswerStore } from './cache/answer-store.js';
import { ResponseCache } from './cache/response-cache.js';
import type { Catalog, ProviderConfig } from './catalog.js';
import { ChatCompletions } from './chat-completions.js';
import { kindFacts } from './upstream-failures.js';
import { GatewayService } from './gateway-service.js';
import { Guardrails, RuleCheck, type GuardrailCheck } from './guardrails.js';
import { DeploymentHealth } from './health.js';
import { ModerationCheck } from './moderation.js';
import { modelList } from './models.js';
import { createProvider } from './provider-factory.js';
import { CircuitTrials, everyInstance } from './circuit-trials.js';
import { shareHealth, sharedTrialGate } from './shared-health.js';

/** How long a replaced provider stays open after a reload: longer than any request runs (billing's hold TTL). */
const RETIRE_AFTER_MS = 15 * 60_000;

export interface Inference {
  gateway: GatewayService;
  completions: ChatCompletions;
  /** Input checks and output moderation of guarded routes (chat completions, Responses API). */
  guardrails: Guardrails;
  /** The `listModels` answer, built once per catalog. */
  models: ReturnType<typeof modelList>;
  /** New requests are routed on `catalog` from now on; requests in flight finish on theirs. */
  reload(catalog: Catalog): void;
  /** Each deployment and its circuit, now (the `listGatewayDeployments` answer). */
  deployments(): DeploymentState[];
  close(): Promise<void>;
}

type DeploymentState = components['schemas']['GatewayDeployment'];

export async function createInference(
  catalog: Catalog,
  options: { logger: Logger; health: HealthService; embedder: Embedder; redis: RedisConnections | null; metrics: Metrics },
): Promise<Inference> {
  let providers = new Map<string, Provider>();
  for (const config of catalog.providers.values()) providers.set(config.id, createProvider(config, { embedder: options.embedder }));
  const deploymentHealth = new DeploymentHealth(catalog);
  deploymentHealth.onChange((event) => options.logger.warn(event, `deployment ${event.deploymentId} circuit ${event.circuit}`));
  const gateway = new GatewayService(catalog, providers, deploymentHealth, options.metrics);
  const CIRCUIT_VALUE = { closed: 0, half_open: 1, open: 2 } as const;
  options.metrics.gauge('gateway_circuit_state', 'Circuit of each deployment: 0 closed, 1 half-open, 2 open.', ['deployment', 'provider'], (set) => {
    for (const d of catalog.deployments.values()) set({ deployment: d.id, provider: d.provider }, CIRCUIT_VALUE[deploymentHealth.circuit(d.id)]);
  });
  const { guardrails, moderation } = guardrailChecks(catalog, options.logger);
  const completions = new ChatCompletions(gateway, guardrails, responseCache(catalog, options));

  // The management health lists each provider: offline when its probe fails (down, or its
  // key refused) or every circuit is open, degraded while some are; last checked by its probe.
  for (const provider of catalog.providers.values()) {
    const deployments = [...catalog.deployments.values()].filter((d) => d.provider === provider.id).map((d) => d.id);
    options.health.register({
      id: `provider:${provider.id}`,
      name: `Model provider ${provider.id} (${provider.type})`,
      critical: false,
      probe: async () => {
        const open = deployments.filter((d) => deploymentHealth.circuit(d) !== 'closed').length;
        const probe = deployments.length > 0 ? deploymentHealth.snapshot(deployments[0]).lastProbe : null;
        const status: HealthStatus = probe?.error || (open > 0 && open === deployments.length) ? 'offline' : open > 0 ? 'degraded' : 'healthy';
        return probe ? { status, checkedAt: probe.at } : status;
      },
    });
  }
  const unshare = options.redis ? await shareHealth(deploymentHealth, options.redis, options.logger) : async () => undefined;
  const prober = startProbes(catalog, providers, deploymentHealth, options.logger);
  const trials = new CircuitTrials(catalog, providers, deploymentHealth, options.redis ? sharedTrialGate(options.redis, options.logger) : everyInstance, options.logger);
  const inference: Inference = {
    gateway,
    completions,
    guardrails,
    models: modelList(catalog, Math.floor(Date.now() / 1000)),
    deployments: deploymentStates(catalog, deploymentHealth),
    reload(next) {
      const previous = { catalog: gateway.catalog, providers };
      providers = reuseProviders(previous, next, (config) => createProvider(config, { embedder: options.embedder }));
      deploymentHealth.reconfigure(next);
      gateway.swap(next, providers);
      inference.models = modelList(next, Math.floor(Date.now() / 1000));
      inference.deployments = deploymentStates(next, deploymentHealth);
      // Replaced providers serve the requests still running on the old catalog: closed once the longest request is over.
      const replaced = [...previous.providers.entries()].filter(([id, p]) => providers.get(id) !== p).map(([, p]) => p);
      if (replaced.length > 0) setTimeout(() => void Promise.all(replaced.map((p) => p.close())), RETIRE_AFTER_MS).unref();
    },
    close: async () => {
      trials.stop();
      clearInterval(prober);
      await unshare();
      await Promise.all([gateway.close(), moderation?.close()]);
    },
  };
  return inference;
}

/** The new catalog's providers: one whose settings did not change is kept as it is (its connections, its state). */
function reuseProviders(
  previous: { catalog: Catalog; providers: ReadonlyMap<string, Provider> },
  next: Catalog,
  create: (config: ProviderConfig) => Provider,
): Map<string, Provider> {
  const providers = new Map<string, Provider>();
  for (const config of next.providers.values()) {
    const before = previous.catalog.providers.get(config.id);
    const same = before && JSON.stringify(before) === JSON.stringify(config);
    providers.set(config.id, same ? previous.providers.get(config.id)! : create(config));
  }
  return providers;
}

/** What `listGatewayDeployments` reads: each deployment (the models it serves, found once) with its circuit now. */
function deploymentStates(catalog: Catalog, health: DeploymentHealth): () => DeploymentState[] {
  const served = new Map<string, string[]>();
  for (const model of catalog.models.values()) for (const id of model.deployments) served.set(id, [...(served.get(id) ?? []), model.id]);
  return () =>
    [...catalog.deployments.values()].map((d) => {
      const state = health.snapshot(d.id);
      return {
        id: d.id,
        provider: d.provider,
        upstreamModel: d.model,
        models: served.get(d.id) ?? [],
        state: state.circuit,
        failures: state.consecutiveFailures,
        lastError: state.lastError,
        lastChange: state.lastChange,
        nextTrialAt: state.nextTrialAt,
        inFlight: state.inFlight,
      };
    });
}

/**
 * Active probes: every provider with deployments is probed every `probe_interval_ms`, so one
 * that is down or misconfigured shows in the health report before traffic finds it (open
 * circuits get trial calls instead: circuit-trials.ts). A probe answered with an error of
 * the request's own (a 404 for an upstream without GET /models) still shows the upstream is up.
 */
function startProbes(catalog: Catalog, providers: ReadonlyMap<string, Provider>, health: DeploymentHealth, logger: Logger): NodeJS.Timeout | undefined {
  const interval = catalog.circuit.probe_interval_ms;
  if (interval === 0) return undefined;
  const ms = catalog.timeouts.connect_ms;
  const timeouts = { connectMs: ms, firstTokenMs: ms, idleMs: ms };
  const byProvider = new Map<string, string[]>();
  for (const d of catalog.deployments.values()) byProvider.set(d.provider, [...(byProvider.get(d.provider) ?? []), d.id]);
  const probeAll = () => {
    for (const [providerId, deployments] of byProvider) {
      providers
        .get(providerId)!
        .probe({ signal: AbortSignal.timeout(ms), timeouts })
        .then(
          () => null,
          (error: unknown) => {
            if (!kindFacts(error).unhealthy) return null;
            logger.warn({ provider: providerId, err: (error as Error).message }, 'provider probe failed');
            return (error as Error).message;
          },
        )
        .then((error) => {
          for (const id of deployments) health.probed(id, error);
        });
    }
  };
  const timer = setInterval(probeAll, interval);
  timer.unref();
  return timer;
}

/** The response cache, when a model of the catalog opts in: in Redis when instances share one, else in memory. */
function responseCache(catalog: Catalog, options: { logger: Logger; redis: RedisConnections | null; metrics: Metrics }): ResponseCache | null {
  if (![...catalog.models.values()].some((m) => m.cache)) return null;
  const { max_bytes: maxBytes, max_entry_bytes: maxEntryBytes } = catalog.responseCache;
  const store = options.redis ? new RedisAnswerStore(options.redis.hotPath, options.logger, options.metrics) : new MemoryAnswerStore(maxBytes);
  return new ResponseCache(store, options.metrics, maxEntryBytes);
}

/** The guardrails the catalog configures: the local rules and, optionally, a moderation endpoint. */
function guardrailChecks(catalog: Catalog, logger: Logger): { guardrails: Guardrails; moderation: ModerationCheck | undefined } {
  const input: GuardrailCheck[] = [];
  const output: GuardrailCheck[] = [];
  if (catalog.guardrails.rules) {
    const rules = new RuleCheck();
    input.push(rules);
    output.push(rules);
  }
  const config = catalog.guardrails.moderation;
  let moderation: ModerationCheck | undefined;
  if (config) {
    const provider = catalog.providers.get(config.provider)!;
    moderation = new ModerationCheck({ baseUrl: provider.base_url!, apiKey: provider.apiKey, model: config.model, onError: config.on_error, timeoutMs: config.timeout_ms, logger });
    if (config.input) input.push(moderation);
    if (config.output) output.push(moderation);
  }
  return { guardrails: new Guardrails(input, output), moderation };
}
