// The domain services handlers reach through their context. Later areas (inference gateway,
// data engine, billing) add their service here and are wired in app.ts.
import type { AgentService } from './agents/agent-service.js';
import type { Config } from './config.js';
import type { ItemService } from './data/items.js';
import type { HealthService } from './health/health-service.js';
import type { Identity } from './identity/index.js';
import type { Database } from './storage/database.js';

export interface Services {
  config: Config;
  database: Database;
  identity: Identity;
  health: HealthService;
  agents: AgentService;
  items: ItemService;
}
