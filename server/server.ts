// Starts the platform: storage, identity, both HTTP listeners; and stops it gracefully.
import { once } from 'node:events';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createApps } from './app.js';
import type { Config } from './config.js';
import type { AdmissionStage } from './http/router.js';
import { HealthService } from './health/health-service.js';
import { answerClientErrors } from './http/errors/client-error.js';
import { closeGracefully } from './http/shutdown.js';
import { stubbedOperations } from './http/not-implemented.js';
import { bootstrapIdentity, type BootstrapResult } from './identity/bootstrap.js';
import { createIdentity } from './identity/index.js';
import type { Services } from './services.js';
import { openDatabase } from './storage/database.js';
import { connectRedis } from './storage/redis.js';
import { IdempotencyStore } from './storage/idempotency-store.js';
import { inferenceIdempotencyStore } from './storage/idempotency-cache.js';
import { idempotencyStage } from './http/admission/idempotency.js';
import { AgentService } from './agents/agent-service.js';
import { billingStage } from './http/admission/billing.js';
import { Estimator } from './billing/estimate.js';
import { BillingService } from './billing/billing-service.js';
import { localSettingsChanges, redisSettingsChanges } from './billing/settings-cache.js';
import { ChatService } from './data/chat/chat-service.js';
import { Paywall } from './data/chat/paywall.js';
import { GroundedCompletions } from './data/grounding/grounded-completions.js';
import { Sources } from './data/grounding/sources.js';
import { createIngestion, gatewayEmbedder } from './data/ingestion/index.js';
import { IngestionFailures } from './data/ingestion/failures.js';
import { sweepSpool } from './http/multipart.js';
import { ItemService } from './data/items.js';
import { createSearchIndex } from './data/search/index.js';
import { rateLimitStage } from './http/admission/rate-limits.js';
import { QuotaSettings } from './limits/quotas.js';
import { createRateLimiter } from './limits/rate-limiter.js';
import { loadCatalog, type Catalog } from './gateway/catalog.js';
import { createInference } from './gateway/index.js';
import { Metrics } from './observability/metrics.js';
import { RequestLog } from './observability/request-log.js';
import { createTracing } from './observability/tracing.js';
import { reloadGatewayConfig, type ReloadOutcome } from './gateway/reload.js';
import { tracingStage } from './http/admission/tracing.js';
import { ResponsesService } from './responses/responses-service.js';
import { ResponseStore } from './responses/store.js';
import { createLocalEmbedder } from './providers/local/local-embedder.js';
import { estimateMessageTokens } from './providers/local/tokens.js';

export interface RunningPlatform {
  apiUrl: string;
  mgmtUrl: string;
  services: Services;
  /** What this start created on an empty database (with the one-time admin key), else null. */
  bootstrap: BootstrapResult | null;
  /** Reads GATEWAY_CONFIG again (SIGHUP: main.ts): reload.ts says what changes and what an invalid file does. */
  reloadGatewayConfig(env?: NodeJS.ProcessEnv): ReloadOutcome;
  close(): Promise<void>;
}

export interface PlatformOptions {
  /** Extra admission stages (run after auth and validation, before handlers). */
  admission?: AdmissionStage[];
  /** The model catalog; default: GATEWAY_CONFIG, else the built-in one for the environment. */
  catalog?: Catalog;
}

export async function startPlatform(config: Config, logger: Logger, options: PlatformOptions = {}): Promise<RunningPlatform> {
  // Everything opened is closed in reverse order, on shutdown or when start-up fails midway.
  const cleanup: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    for (const step of cleanup.reverse()) await step().catch((error) => logger.error({ err: error }, 'shutdown step failed'));
  };
  try {
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
    cleanup.push(() => database.close());
    const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : null;
    if (redis) cleanup.push(() => redis.close());
    const identity = await createIdentity({ database, redis, logger, credentialCacheTtlMs: config.credentialCacheTtlMs });
    cleanup.push(() => identity.close());
    const bootstrap = await bootstrapIdentity(database.prisma, logger, config.bootstrapAdminKey);

    const health = new HealthService();
    health.register({
      id: 'database',
      name: database.kind === 'pglite' ? 'Database (embedded PGlite)' : 'Database (PostgreSQL)',
      critical: true,
      probe: async () => (await database.ping(), 'healthy'),
    });
    if (redis) {
      health.register({ id: 'redis', name: 'Redis (shared state)', critical: false, probe: async () => (await redis.ping(), 'healthy') });
    }
    const metrics = new Metrics();
    // The request log: rows written behind in batches, swept after the retention.
    // Closed after billing has settled the last requests, whose rows it then writes.
    const requestLog = new RequestLog(database.prisma, logger, config.requestLogRetentionMs, config.requestLogBodies);
    if (requestLog.enabled) requestLog.writer.startSweeping();
    cleanup.push(() => requestLog.writer.close());
    const tracing = await createTracing(config, logger);
    cleanup.push(() => tracing.close());
    // The local embedding model (server/providers/local): worker threads, started on first use.
    const embedder = createLocalEmbedder(config);
    cleanup.push(() => embedder.close());
    metrics.gauge('local_embedder_threads', 'Worker threads of the local embedding model, per lane.', ['lane'], (set) => {
      for (const { lane, threads } of embedder.lanes()) set({ lane }, threads);
    });
    metrics.gauge('local_embedder_queued', 'Embedding tasks waiting for a thread of the local model, per lane.', ['lane'], (set) => {
      for (const { lane, queued } of embedder.lanes()) set({ lane }, queued);
    });
    const inference = await createInference(options.catalog ?? loadCatalog(), { logger, health, embedder, redis, metrics });
    cleanup.push(() => inference.close());
    // Billing (server/billing): holds in Redis when configured, else in the database; holds a
    // dead process left open are released at start (all of them on PGlite, which has one
    // owner) and by every instance's heartbeat. Billing settings changes reach the other
    // instances' caches through Redis when configured.
    const billingChanges = redis ? await redisSettingsChanges(redis, logger) : localSettingsChanges();
    cleanup.push(() => billingChanges.close());
    const billing = new BillingService(database.prisma, inference.gateway, logger, {
      changes: billingChanges,
      hot: redis ? { redis: redis.hotPath, metrics } : undefined,
      instanceId: config.instanceId ?? (config.port !== 0 ? `${hostname()}:${config.port}` : undefined),
    });
    await billing.reservations.start(database.kind === 'pglite');
    cleanup.push(() => billing.reservations.stop());
    // Rate limits (server/limits): counted in Redis when configured, else in process.
    const rateLimits = createRateLimiter(redis, logger, metrics);
    cleanup.push(() => rateLimits.close());
    const quotas = new QuotaSettings(database.prisma, config);
    const search = createSearchIndex(database, inference.gateway, { collection: config.searchCollection, embeddingModel: config.searchEmbeddingModel, logger });
    const sources = new Sources(database.prisma, search.retriever);
    // Responses API (server/responses): stored responses expire after the retention, swept.
    const responseStore = new ResponseStore(database.prisma, config.responseRetentionMs);
    const stopResponseSweep = responseStore.startSweeping();
    cleanup.push(async () => stopResponseSweep());
    // Ingestion (server/data/ingestion): the worker shares the database's job queue with every
    // other instance. Stopped before the database closes: running jobs go back to the queue.
    const ingestion = createIngestion({
      database,
      organizations: identity.organizations,
      chunkIndex: search.chunkIndex,
      embedder: gatewayEmbedder(inference.gateway),
      config,
      logger,
    });
    // On PGlite this process is the database's only user: a running job is a crashed run's.
    if (database.kind === 'pglite') await ingestion.queue.recoverAbandoned();
    // Files of jobs that ended while their worker died (or before this cleanup existed).
    await ingestion.queue.removeFinishedFiles();
    await sweepSpool(config.uploadTmpDir);
    ingestion.worker.start();
    cleanup.push(() => ingestion.close());
    const services: Services = {
      config,
      database,
      identity,
      health,
      agents: new AgentService(database.prisma),
      items: new ItemService(database.prisma, identity.organizations),
      ingestion: ingestion.service,
      ingestionFailures: new IngestionFailures(database.prisma, () => ingestion.worker.wake()),
      chunkIndex: search.chunkIndex,
      retriever: search.retriever,
      collections: search.collections,
      search: search.search,
      grounding: new GroundedCompletions(sources, inference.completions),
      chats: new ChatService(database.prisma, sources, inference.completions),
      paywall: new Paywall(database.prisma, sources, search.retriever),
      inference,
      responses: new ResponsesService(inference.gateway, inference.guardrails, responseStore, sources),
      metrics,
      requestLog,
      billing,
      limits: { quotas, limiter: rateLimits.limiter },
    };
    const idempotency = new IdempotencyStore(database.prisma);
    idempotency.startSweeping();
    cleanup.push(async () => idempotency.stopSweeping());
    const stores = { durable: idempotency, inference: inferenceIdempotencyStore(redis, logger, metrics) };
    // A request's worst case, with the conversation it continues (stored response, or chat).
    const estimator = new Estimator(inference.gateway, {
      response: (organizationId, id) => services.responses.historyTokens(organizationId, id),
      chat: async (organizationId, chatId) => estimateMessageTokens(await services.chats.contextOf(organizationId, chatId)),
    });
    const admission = [
      // First, so that the request span holds every other stage (off: not installed at all).
      ...(tracing.enabled ? [tracingStage(tracing)] : []),
      // Before idempotency: a 429 must not become the stored answer of the client's retry key.
      rateLimitStage(rateLimits.limiter, quotas, estimator),
      idempotencyStage(stores, { waitMs: config.idempotencyWaitMs, pollMs: 100 }),
      billingStage(billing, estimator, logger),
      ...(options.admission ?? []),
    ];
    const ports = { api: config.port, management: config.mgmtPort };
    const apps = await createApps({ services, logger, authenticator: identity.authenticator, admission, ports });

    // A client that sends its request slowly, or never finishes it, cannot hold a connection.
    const limits = {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(config.requestTimeoutMs, 30_000),
      // Node checks these limits every 30 s by default, far coarser than the limits themselves.
      connectionsCheckingInterval: Math.min(1_000, config.requestTimeoutMs),
    };
    const apiServer = apps.api(limits);
    const mgmtServer = apps.management(limits);
    answerClientErrors(apiServer, logger);
    answerClientErrors(mgmtServer, logger);
    cleanup.push(() =>
      Promise.all([closeGracefully(apiServer, config.shutdownTimeoutMs), closeGracefully(mgmtServer, config.shutdownTimeoutMs)]),
    );
    await listen(apiServer, config.port, config.host);
    await listen(mgmtServer, config.mgmtPort, config.host);

    ports.api = (apiServer.address() as AddressInfo).port;
    ports.management = (mgmtServer.address() as AddressInfo).port;
    const apiUrl = urlOf(apiServer, config.host);
    const mgmtUrl = urlOf(mgmtServer, config.host);
    logger.info({ apiUrl, mgmtUrl, database: database.kind, capabilities: database.capabilities }, 'platform listening');
    // The first search must not wait for the model to load (when search embeds with it, which
    // needs pgvector). In the background, once listening: start-up and health do not wait either.
    if (config.localEmbedderWarm && database.capabilities.vector && servedLocally(inference.gateway.catalog, search.collections.defaultSpace?.model)) {
      embedder.warm().then(
        () => logger.info('local embedding model loaded for queries'),
        (error: unknown) => logger.warn({ err: error }, 'loading the local embedding model for queries failed; the first query loads it'),
      );
    }
    const stubs = stubbedOperations();
    if (stubs.length > 0) logger.warn({ operations: stubs }, `${stubs.length} operations are still stubs answering 501`);

    let closing: Promise<void> | undefined;
    return {
      apiUrl,
      mgmtUrl,
      services,
      bootstrap,
      reloadGatewayConfig: (env = process.env) => reloadGatewayConfig(inference, env, logger),
      close: () => (closing ??= closeAll()),
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** Whether the model is served by the built-in local provider (an upstream's needs no warming). */
function servedLocally(catalog: Catalog, model: string | undefined): boolean {
  return model !== undefined && (catalog.models.get(model)?.deployments ?? []).some((id) => catalog.deployments.get(id)?.kind === 'local');
}

async function listen(server: Server, port: number, host: string): Promise<void> {
  server.listen(port, host);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error))]);
}

function urlOf(server: Server, host: string): string {
  const { port } = server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
