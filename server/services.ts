// The domain services handlers reach through their context. Later areas (data engine,
// billing) add their service here and are wired in server.ts.
import type { AgentService } from './agents/agent-service.js';
import type { BillingService } from './billing/billing-service.js';
import type { Config } from './config.js';
import type { ItemService } from './data/items.js';
import type { HealthService } from './health/health-service.js';
import type { Inference } from './gateway/index.js';
import type { Identity } from './identity/index.js';
import type { Metrics } from './observability/metrics.js';
import type { Database } from './storage/database.js';

export interface Services {
  config: Config;
  database: Database;
  identity: Identity;
  health: HealthService;
  agents: AgentService;
  items: ItemService;
  inference: Inference;
  metrics: Metrics;
  /** Metering, prepaid credit, weekly caps, coding-agent allowances. */
  billing: BillingService;
}
