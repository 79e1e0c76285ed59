// Billing: an account side (accounts.ts: mode, caps, credit, plans, usage) and a request
// side (reservations.ts: reserve-then-settle), sharing the database, the unmetered usage
// written behind and, with REDIS_URL, the pools' Redis copies.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Catalog } from '../gateway/catalog.js';
import type { Metrics } from '../observability/metrics.js';
import { BillingAccounts } from './accounts.js';
import { HotCopies } from './hot-copies.js';
import { Incarnations } from './instances.js';
import { Reservations } from './reservations.js';
import type { SettingsChanges } from './settings-cache.js';
import { UsageBuffer } from './usage-buffer.js';

export interface BillingOptions {
  /** How settings changes reach the other instances (default: this process only). */
  changes?: SettingsChanges;
  /** Holds in Redis (its fail-fast connection), with the database as the fallback. */
  hot?: { redis: Redis; metrics: Metrics };
  /** INSTANCE_ID (config.ts): a restart under the same id releases what the previous process held. */
  instanceId?: string;
}

export class BillingService {
  readonly accounts: BillingAccounts;
  readonly reservations: Reservations;

  constructor(prisma: PrismaClient, catalogs: { readonly catalog: Catalog }, logger: Logger, options: BillingOptions = {}) {
    const unmeteredUsage = new UsageBuffer(prisma, logger);
    const incarnations = new Incarnations(prisma, options.instanceId ?? `anonymous:${randomUUID()}`);
    const hot = options.hot ? new HotCopies(options.hot.redis, options.hot.metrics, logger, incarnations) : null;
    this.accounts = new BillingAccounts(prisma, unmeteredUsage, hot, options.changes);
    this.reservations = new Reservations(prisma, catalogs, logger, unmeteredUsage, incarnations, hot);
  }
}
