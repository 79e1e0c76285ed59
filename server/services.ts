// The domain services handlers reach through their context. Later areas (data engine,
// billing) add their service here and are wired in server.ts.
import type { AgentService } from './agents/agent-service.js';
import type { BillingService } from './billing/billing-service.js';
import type { Config } from './config.js';
import type { ChatService } from './data/chat/chat-service.js';
import type { Paywall } from './data/chat/paywall.js';
import type { GroundedCompletions } from './data/grounding/grounded-completions.js';
import type { IngestionFailures } from './data/ingestion/failures.js';
import type { IngestionService } from './data/ingestion/ingestion-service.js';
import type { ItemService } from './data/items.js';
import type { ChunkIndex, Retriever } from './data/search/chunk-index.js';
import type { Collections } from './data/search/collections.js';
import type { SearchService } from './data/search/search-service.js';
import type { HealthService } from './health/health-service.js';
import type { Inference } from './gateway/index.js';
import type { Identity } from './identity/index.js';
import type { QuotaSettings } from './limits/quotas.js';
import type { RateLimiter } from './limits/rate-limiter.js';
import type { Metrics } from './observability/metrics.js';
import type { RequestLog } from './observability/request-log.js';
import type { ResponsesService } from './responses/responses-service.js';
import type { Database } from './storage/database.js';

export interface Services {
  config: Config;
  database: Database;
  identity: Identity;
  health: HealthService;
  agents: AgentService;
  items: ItemService;
  /** Uploads and real-time documents into the durable ingestion queue (server/data/ingestion). */
  ingestion: IngestionService;
  /** Failed ingestion items and their retry (the console's ingestion page). */
  ingestionFailures: IngestionFailures;
  /** Where ingestion writes an item's passages (server/data/search). */
  chunkIndex: ChunkIndex;
  /** Hybrid retrieval over an organization's passages: search, recommendations, grounding. */
  retriever: Retriever;
  /** An organization's named collections (`GlooProd`, tenants = publisher names). */
  collections: Collections;
  /** searchCollection, recommendations, affiliates' referenced items. */
  search: SearchService;
  /** Grounded chat completions: retrieval from a publisher's content, then the guarded model call. */
  grounding: GroundedCompletions;
  /** Chat API v1 (deprecated): chats and their messages, per organization. */
  chats: ChatService;
  /** Paywall-related (deprecated): an item's teaser and related articles. */
  paywall: Paywall;
  inference: Inference;
  /** The Responses API (v2 guarded, v1 direct, grounded) over the gateway; stored responses. */
  responses: ResponsesService;
  metrics: Metrics;
  /** The request log of the API port (the console's requests page), written behind in batches. */
  requestLog: RequestLog;
  /** Metering, prepaid credit, weekly caps, coding-agent allowances. */
  billing: BillingService;
  /** Rate limits: per-key and per-organization quotas and the limiter counting them. */
  limits: { quotas: QuotaSettings; limiter: RateLimiter };
}
