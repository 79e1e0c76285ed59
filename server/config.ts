// Environment → validated configuration. Every bad value is reported at once, by name,
// before anything starts listening.
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { redactUrl } from './logging.js';
import type { ContentLimits } from './data/ingestion/limits.js';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');
const bytes = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const match = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(value.trim());
      if (!match) {
        ctx.addIssue({ code: 'custom', message: `expected a size like 512kb or 10mb, got "${value}"` });
        return z.NEVER;
      }
      const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(match[2] ?? 'b').toLowerCase() as 'b'];
      return Number(match[1]) * unit;
    });

const perMinute = z.number().int().min(0).max(2_000_000_000);
const planQuota = z.object({ rpm: perMinute.optional(), tpm: perMinute.optional() }).strict();
/** `{"free": {"organization": {"rpm": 60, "tpm": 100000}, "key": {"rpm": 20}}, …}` */
const ratePlans = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (!value) return {};
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'expected JSON: {"<plan>": {"organization": {"rpm": n, "tpm": n}, "key": {"rpm": n, "tpm": n}}}' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().regex(/^[\w.-]{1,64}$/, 'plan names are letters, digits and . _ -'), z.object({ organization: planQuota.optional(), key: planQuota.optional() }).strict()));

const schema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: port(8080),
  MGMT_PORT: port(8081),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('.data/pglite'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL')
    .optional(),
  /** OTLP/HTTP collector (traces go to its /v1/traces); unset: no tracing, the SDK is never loaded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('inference-platform'),
  INSTANCE_ID: z
    .string()
    .regex(/^[\w.:-]{1,200}$/, 'expected letters, digits and . : _ - (e.g. a host name)')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  JSON_BODY_LIMIT: bytes('10mb'),
  UPLOAD_FILE_LIMIT: bytes('50mb'),
  UPLOAD_MAX_FILES: z.coerce.number().int().min(1).max(1000).default(20),
  UPLOAD_TMP_DIR: z.string().min(1).default(join(tmpdir(), 'inference-platform-uploads')),
  INGESTION_WORKERS: z.coerce.number().int().min(0).max(64).default(2),
  INGESTION_LEASE_MS: z.coerce.number().int().min(1_000).default(60_000),
  INGESTION_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  INGESTION_RETRY_BASE_MS: z.coerce.number().int().min(0).default(2_000),
  // Parsing and chunking run in worker threads: by default every core but one, which the request thread keeps.
  INGEST_PARSE_THREADS: z.coerce.number().int().min(1).max(64).default(Math.max(1, availableParallelism() - 1)),
  INGEST_WORKER_MEMORY_MB: z.coerce.number().int().min(32).max(65_536).default(512),
  INGEST_JOB_BUDGET_MS: z.coerce.number().int().min(100).default(120_000),
  INGEST_MAX_PAGES: z.coerce.number().int().min(1).default(2_000),
  INGEST_MAX_INFLATED_BYTES: bytes('64mb'),
  INGEST_MAX_CHARS: z.coerce.number().int().min(1).default(60_000_000),
  INGEST_MAX_HTML_DEPTH: z.coerce.number().int().min(8).default(512),
  INGEST_MAX_PASSAGES: z.coerce.number().int().min(1).default(100_000),
  // The local embedding model's passage threads: by default every core but one, which the request thread keeps.
  LOCAL_EMBEDDER_THREADS: z.coerce.number().int().min(1).max(64).default(Math.max(1, availableParallelism() - 1)),
  LOCAL_EMBEDDER_QUERY_THREAD: bool(true),
  LOCAL_EMBEDDER_WARM: bool(true),
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(60_000),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  VALIDATE_RESPONSES: bool(false),
  // Spec 5.2: revocation takes effect within 60 s, so a cached credential may live no longer.
  IDEMPOTENCY_WAIT_MS: z.coerce.number().int().min(0).max(600_000).default(30_000),
  CREDENTIAL_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(30_000),
  BOOTSTRAP_ADMIN_KEY: bool(true),
  RESPONSE_RETENTION_DAYS: z.coerce.number().min(0).max(3650).default(30),
  REQUEST_LOG_RETENTION_DAYS: z.coerce.number().min(0).max(3650).default(7),
  REQUEST_LOG_BODIES: bool(false),
  SEARCH_COLLECTION: z.string().min(1).default('GlooProd'),
  SEARCH_EMBEDDING_MODEL: z.string().min(1).optional(),
  RATE_LIMIT_PLANS: ratePlans,
  RATE_LIMIT_DEFAULT_PLAN: z.string().min(1).optional(),
  CORS_ORIGINS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const origins = (value ?? '').split(',').map((o) => o.trim()).filter(Boolean);
      for (const origin of origins) {
        // An origin is scheme://host[:port], exactly as a browser sends it: no path, no trailing slash.
        if (origin !== '*' && !/^https?:\/\/[^/\s]+$/i.test(origin)) {
          ctx.addIssue({ code: 'custom', message: `expected "*" or origins like https://app.example.com, got "${origin}"` });
          return z.NEVER;
        }
      }
      return origins;
    }),
});

/** A rate-limit plan: default quotas of an organization on it and of each of its keys (per minute; absent: no limit). */
export interface RatePlan {
  organization?: { rpm?: number; tpm?: number };
  key?: { rpm?: number; tpm?: number };
}

export type Config = {
  host: string;
  port: number;
  mgmtPort: number;
  databaseUrl: string | undefined;
  dataDir: string;
  redisUrl: string | undefined;
  /** OpenTelemetry: traces exported over OTLP/HTTP to this endpoint (server/observability/tracing.ts); undefined: off. */
  otlpEndpoint: string | undefined;
  otelServiceName: string;
  /**
   * Names this instance across restarts (billing holds it left open are released when it
   * starts again); unset: the host name and port, or a random id when the port is 0.
   */
  instanceId: string | undefined;
  logLevel: z.infer<typeof schema>['LOG_LEVEL'];
  jsonBodyLimit: number;
  uploadFileLimit: number;
  uploadMaxFiles: number;
  /** Where uploaded file parts are spooled while their request is handled (never held in memory). */
  uploadTmpDir: string;
  /** Ingestion jobs this instance runs at once (0: this instance only accepts uploads). */
  ingestionWorkers: number;
  /** How long a worker's claim on a job lasts without renewal: a dead worker's job is taken over after it. */
  ingestionLeaseMs: number;
  /** Attempts of a job before its item is FAILED. */
  ingestionMaxAttempts: number;
  /** First retry delay; doubles with every failed attempt. */
  ingestionRetryBaseMs: number;
  /** Worker threads parsing and chunking files (INGEST_PARSE_THREADS). */
  ingestParseThreads: number;
  /** Heap cap of a parse thread: a file that needs more kills its thread, not the server. */
  ingestWorkerMemoryMb: number;
  /** Wall-clock budget of a file's parsing and chunking; past it the thread is terminated. */
  ingestJobBudgetMs: number;
  /** What one file may hold (server/data/ingestion/limits.ts). */
  ingestLimits: ContentLimits;
  /** Worker threads of the local embedding model embedding passages (ingestion, large embeddings calls). */
  localEmbedderThreads: number;
  /** A thread of its own for short inputs (search queries), so that they never wait behind passages. */
  localEmbedderQueryThread: boolean;
  /** Load the local embedding model for queries in the background at start, when search embeds with it. */
  localEmbedderWarm: boolean;
  /** A request (headers and body, not the answer) must arrive within this. */
  requestTimeoutMs: number;
  shutdownTimeoutMs: number;
  /** Check every JSON response against openapi.yaml (on in tests; costs time in production). */
  validateResponses: boolean;
  /** How long a repeated POST waits for the first one with its Idempotency-Key before a 409. */
  idempotencyWaitMs: number;
  /** How long a resolved credential is trusted without asking the database. */
  credentialCacheTtlMs: number;
  /** Print one admin key on first start with an empty database. */
  bootstrapAdminKey: boolean;
  /** How long a stored Responses API answer can be continued with previous_response_id. */
  responseRetentionMs: number;
  /** How long the request log (the console's, GET /api/v1/requests) keeps a request; 0: not kept. */
  requestLogRetentionMs: number;
  /** Whether the request log keeps request bodies (prompts): off unless the operator turns it on. */
  requestLogBodies: boolean;
  /** Rate-limit plans by name (RATE_LIMIT_PLANS); an organization's own limits override its plan's. */
  rateLimitPlans: Record<string, RatePlan>;
  /** The plan of organizations that have none (RATE_LIMIT_DEFAULT_PLAN); unset: no default limits. */
  rateLimitDefaultPlan: string | undefined;
  /** Browser origins allowed to call the API port (CORS); empty: CORS off; `*`: any origin. */
  corsOrigins: string[];
  /** The multi-tenant collection every organization has (tenants are its publishers' names). */
  searchCollection: string;
  /**
   * The catalog embedding model a new collection's passages are indexed with; unset: the
   * catalog's `local-embedding`, else its first embedding model.
   */
  searchEmbeddingModel: string | undefined;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Variables set to the empty string count as unset, as most deployment tools write them. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0]);
        const value = env[name] ?? '';
        // URLs may carry passwords: never echo them whole.
        return `${name}=${JSON.stringify(name.endsWith('_URL') ? redactUrl(value) : value)}: ${issue.message}`;
      }),
    );
  }
  const c = parsed.data;
  if (c.RATE_LIMIT_DEFAULT_PLAN !== undefined && !(c.RATE_LIMIT_DEFAULT_PLAN in c.RATE_LIMIT_PLANS)) {
    throw new ConfigError([`RATE_LIMIT_DEFAULT_PLAN=${JSON.stringify(c.RATE_LIMIT_DEFAULT_PLAN)}: not a plan of RATE_LIMIT_PLANS (${Object.keys(c.RATE_LIMIT_PLANS).join(', ') || 'none'})`]);
  }
  return {
    host: c.HOST,
    port: c.PORT,
    mgmtPort: c.MGMT_PORT,
    databaseUrl: c.DATABASE_URL,
    dataDir: c.DATA_DIR,
    redisUrl: c.REDIS_URL,
    otlpEndpoint: c.OTEL_EXPORTER_OTLP_ENDPOINT,
    otelServiceName: c.OTEL_SERVICE_NAME,
    instanceId: c.INSTANCE_ID,
    logLevel: c.LOG_LEVEL,
    jsonBodyLimit: c.JSON_BODY_LIMIT,
    uploadFileLimit: c.UPLOAD_FILE_LIMIT,
    uploadMaxFiles: c.UPLOAD_MAX_FILES,
    uploadTmpDir: c.UPLOAD_TMP_DIR,
    ingestionWorkers: c.INGESTION_WORKERS,
    ingestionLeaseMs: c.INGESTION_LEASE_MS,
    ingestionMaxAttempts: c.INGESTION_MAX_ATTEMPTS,
    ingestionRetryBaseMs: c.INGESTION_RETRY_BASE_MS,
    ingestParseThreads: c.INGEST_PARSE_THREADS,
    ingestWorkerMemoryMb: c.INGEST_WORKER_MEMORY_MB,
    ingestJobBudgetMs: c.INGEST_JOB_BUDGET_MS,
    ingestLimits: {
      maxPages: c.INGEST_MAX_PAGES,
      maxInflatedBytes: c.INGEST_MAX_INFLATED_BYTES,
      maxChars: c.INGEST_MAX_CHARS,
      maxHtmlDepth: c.INGEST_MAX_HTML_DEPTH,
      maxPassages: c.INGEST_MAX_PASSAGES,
    },
    localEmbedderThreads: c.LOCAL_EMBEDDER_THREADS,
    localEmbedderQueryThread: c.LOCAL_EMBEDDER_QUERY_THREAD,
    localEmbedderWarm: c.LOCAL_EMBEDDER_WARM,
    requestTimeoutMs: c.REQUEST_TIMEOUT_MS,
    shutdownTimeoutMs: c.SHUTDOWN_TIMEOUT_MS,
    validateResponses: c.VALIDATE_RESPONSES,
    credentialCacheTtlMs: c.CREDENTIAL_CACHE_TTL_MS,
    idempotencyWaitMs: c.IDEMPOTENCY_WAIT_MS,
    bootstrapAdminKey: c.BOOTSTRAP_ADMIN_KEY,
    responseRetentionMs: c.RESPONSE_RETENTION_DAYS * 24 * 60 * 60 * 1000,
    requestLogRetentionMs: c.REQUEST_LOG_RETENTION_DAYS * 24 * 60 * 60 * 1000,
    requestLogBodies: c.REQUEST_LOG_BODIES,
    rateLimitPlans: c.RATE_LIMIT_PLANS,
    rateLimitDefaultPlan: c.RATE_LIMIT_DEFAULT_PLAN,
    corsOrigins: c.CORS_ORIGINS,
    searchCollection: c.SEARCH_COLLECTION,
    searchEmbeddingModel: c.SEARCH_EMBEDDING_MODEL,
  };
}
