// Metering and the billing gates: every model call is recorded (tokens and cost at the
// catalog's prices, attributed to organization, key and model); a prepaid organization's
// request first holds its estimate against the balance (or a coding-agent plan's
// allowance) and the weekly cap, and the hold is settled with the actual charge when the
// request ends. The database is the truth: balances, spend and the ledger change only in
// its transactions. A hold is taken in one atomic step, so concurrent requests (across
// instances too) cannot overdraw what is held: a script in Redis when REDIS_URL is set
// (redis-holds.ts: no database transaction on the request's path), else one conditional
// statement in the database (database-holds.ts), which is also the fallback while Redis
// cannot answer. Holds of a process that died are released (instances.ts). Off the
// per-request path: the billing mode is cached (settings-cache.ts) and unmetered usage rows
// are written behind in batches (usage-buffer.ts).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import type { Catalog } from '../gateway/catalog.js';
import { routeOf } from '../gateway/route-header.js';
import type { MeteredAttempt } from '../gateway/usage-scope.js';
import type { Metrics } from '../observability/metrics.js';
import { RedisFallback } from '../storage/redis-fallback.js';
import { CreditService, ensureBillingAccount, type CreditEntry } from './credit.js';
import { holdInDatabase, releaseHolds, type ReserveRequest } from './database-holds.js';
import { HEARTBEAT_MS, Incarnations, RESERVATION_TTL_MS } from './instances.js';
import {
  ACCOUNT_COLUMNS,
  accountState,
  creditOrKeyRefusal,
  currentSpend,
  KEY_POOL_COLUMNS,
  keyPoolState,
  PLAN_COLUMNS,
  planState,
  readKeyPool,
  readPool,
  refusal,
  type AccountColumns,
  type KeyPoolColumns,
  type PlanColumns,
  type PoolState,
} from './pools.js';
import { costMicros, nextWeekStart, periodStart, weekStart, type PlanPeriod } from './pricing.js';
import { RedisHolds } from './redis-holds.js';
import { localSettingsChanges, SettingsCache, type SettingsChanges } from './settings-cache.js';
import { UsageBuffer } from './usage-buffer.js';

export { RESERVATION_TTL_MS, type ReserveRequest };

export const BILLING_MODES = ['unmetered', 'prepaid'] as const;
export type BillingMode = (typeof BILLING_MODES)[number];

export interface BillingSettings {
  mode: BillingMode;
  weeklyCapMicros: bigint | null;
}

export interface Reservation {
  id: string;
  estimateMicros: bigint;
  product: string | null;
  model: string;
  /** Where the hold is kept until it is settled (a Redis hold gets its database row then). */
  kept: 'database' | 'redis';
  /** The limited key whose pool the hold counts on too (pools.ts); null: none. */
  limitedKey: string | null;
  createdAt: Date;
}

export interface SettleRequest {
  organizationId: string;
  apiKeyId: string | null;
  operation: string;
  traceId: string;
  product: string | null;
  /** Charge the balance or allowance (prepaid); unmetered organizations only record usage. */
  charge: boolean;
  reservation: Reservation | null;
  /** The request's upstream calls, each with its attempts in order. */
  calls: MeteredAttempt[][];
}

/** A settled request's model calls in sum (the request log shows it beside the request). */
export interface Settlement {
  billedMicros: bigint;
  costMicros: bigint;
  inputTokens: number;
  outputTokens: number;
  /** The last attempt's model and provider: the one that answered, or failed last. */
  model: string | null;
  provider: string | null;
  /** Every attempt of every call, as X-Gateway-Route says it; null without a model call. */
  route: string | null;
}

function settlement(s: SettleRequest, catalog: Catalog, rows: readonly Prisma.UsageRecordCreateManyInput[], billedMicros: bigint): Settlement {
  const attempts = s.calls.flat();
  const last = attempts.at(-1);
  const sum: Settlement = {
    billedMicros,
    costMicros: 0n,
    inputTokens: 0,
    outputTokens: 0,
    model: last?.modelId ?? null,
    provider: (last && catalog.deployments.get(last.deploymentId)?.provider) ?? null,
    route: attempts.length > 0 ? routeOf(attempts) : null,
  };
  for (const row of rows) {
    sum.costMicros += BigInt(row.costMicros ?? 0);
    sum.inputTokens += row.inputTokens ?? 0;
    sum.outputTokens += row.outputTokens ?? 0;
  }
  return sum;
}

/** What a usage line totals: a model, an API key, or a coding-agent product (null: API credit). */
export const USAGE_GROUPS = ['model', 'provider', 'key', 'product'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];
/** Usage over time: buckets of an hour or a day, aligned on UTC. */
export type UsageBucket = 'hour' | 'day';

const USAGE_COLUMN: Record<UsageGroup, Prisma.Sql> = {
  model: Prisma.raw('model'),
  provider: Prisma.raw('provider'),
  key: Prisma.raw('api_key_id::text'),
  product: Prisma.raw('product'),
};

export interface UsageLine {
  /** Start of the line's bucket (epoch ms), when usage was asked per bucket. */
  start?: number;
  group: string | null;
  /** upstream calls recorded (a resumed stream counts each upstream) */
  calls: number;
  inputTokens: number;
  outputTokens: number;
  costMicros: bigint;
  billedMicros: bigint;
}

export interface BillingOverview extends BillingSettings {
  balanceMicros: bigint;
  reservedMicros: bigint;
  weekSpentMicros: bigint;
  weekStart: Date;
  weekResetsAt: Date;
  codingPlans: {
    product: string;
    period: PlanPeriod;
    allowanceMicros: bigint;
    usedMicros: bigint;
    reservedMicros: bigint;
    periodStart: Date;
    topupAvailable: boolean;
  }[];
}

export interface BillingOptions {
  /** How settings changes reach the other instances (default: this process only). */
  changes?: SettingsChanges;
  /** Holds in Redis (its fail-fast connection), with the database as the fallback. */
  hot?: { redis: Redis; metrics: Metrics };
  /** INSTANCE_ID (config.ts): a restart under the same id releases what the previous process held. */
  instanceId?: string;
}

export class BillingService {
  readonly credit: CreditService;
  private readonly cachedSettings: SettingsCache<BillingSettings>;
  private readonly unmeteredUsage: UsageBuffer;
  private readonly incarnations: Incarnations;
  private readonly hot: { holds: RedisHolds; fallback: RedisFallback } | null;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    /** The catalog now (the gateway's: a reload changes it), for the prices usage is billed at. */
    private readonly catalogs: { readonly catalog: Catalog },
    private readonly logger: Logger,
    options: BillingOptions = {},
  ) {
    this.credit = new CreditService(prisma);
    this.cachedSettings = new SettingsCache((organizationId) => this.readSettings(organizationId), options.changes ?? localSettingsChanges());
    this.unmeteredUsage = new UsageBuffer(prisma, logger);
    this.incarnations = new Incarnations(prisma, options.instanceId ?? `anonymous:${randomUUID()}`);
    this.hot = options.hot
      ? {
          holds: new RedisHolds(options.hot.redis),
          fallback: new RedisFallback(
            {
              metric: 'billing_database_holds_total',
              help: 'Billing holds (and their settlements) kept in the database because Redis could not answer (reason: redis_unavailable).',
              degraded: 'billing holds are taken in the database until it is back',
              restored: 'billing holds are taken in Redis again',
            },
            logger,
            options.hot.metrics,
          ),
        }
      : null;
  }

  /** The organization's mode and weekly cap, as admission sees them: cached (see settings-cache.ts for how stale). */
  settings(organizationId: string): Promise<BillingSettings> {
    return this.cachedSettings.get(organizationId);
  }

  private async readSettings(organizationId: string): Promise<BillingSettings> {
    const org = await this.prisma.organization.findUnique({ where: { id: organizationId }, select: { billingMode: true, weeklyCapMicros: true } });
    return { mode: org?.billingMode === 'prepaid' ? 'prepaid' : 'unmetered', weeklyCapMicros: org?.weeklyCapMicros ?? null };
  }

  async setMode(organizationId: string, mode: BillingMode): Promise<void> {
    if (mode === 'prepaid') await ensureBillingAccount(this.prisma, organizationId);
    await this.prisma.organization.update({ where: { id: organizationId }, data: { billingMode: mode } });
    await this.cachedSettings.changed(organizationId);
  }

  /**
   * Sets (null: removes) the weekly cap. The week's spend is counted again from the usage
   * records, so a cap set on an organization whose spend was not tracked (unmetered, no cap
   * until now) counts what it spent this week (less what other instances still buffer: at
   * most USAGE_FLUSH_MS of unmetered usage, or a request settling at that very moment).
   */
  async setWeeklyCap(organizationId: string, capMicros: bigint | null): Promise<void> {
    await ensureBillingAccount(this.prisma, organizationId);
    await this.unmeteredUsage.flush();
    const week = weekStart();
    const [, state] = await this.prisma.$transaction([
      this.prisma.organization.update({ where: { id: organizationId }, data: { weeklyCapMicros: capMicros } }),
      // The account's version moves too: a copy of the credit pool (Redis) carries the cap.
      this.prisma.$queryRaw<AccountColumns[]>`
        UPDATE billing_accounts SET
          version = version + 1,
          week_start = ${week}::timestamptz,
          week_spent_micros = (SELECT COALESCE(sum(billed_micros), 0) FROM usage_records
                               WHERE organization_id = ${organizationId}::uuid AND product IS NULL AND created_at >= ${week}::timestamptz)
        WHERE organization_id = ${organizationId}::uuid RETURNING ${ACCOUNT_COLUMNS}`,
    ]);
    await this.cachedSettings.changed(organizationId);
    await this.installCopy(organizationId, null, accountState(state[0], capMicros));
  }

  async setCodingPlan(organizationId: string, product: string, plan: { allowanceMicros: bigint; topupAvailable: boolean; period?: PlanPeriod }): Promise<void> {
    const data = { allowanceMicros: plan.allowanceMicros, topupAvailable: plan.topupAvailable, period: plan.period ?? 'month' };
    await this.prisma.codingPlan.upsert({
      where: { organizationId_product: { organizationId, product } },
      create: { organizationId, product, ...data },
      update: { ...data, version: { increment: 1 } },
    });
    const state = await readPool(this.prisma, organizationId, product);
    if (state) await this.installCopy(organizationId, product, state);
  }

  /** Appends prepaid credit; the next request is served at once (on every instance). */
  async addCredit(organizationId: string, amountMicros: bigint, reason: string): Promise<CreditEntry> {
    const entry = await this.credit.add(organizationId, amountMicros, reason);
    const state = await readPool(this.prisma, organizationId, null);
    if (state) await this.installCopy(organizationId, null, state);
    return entry;
  }

  /** Balance, open holds and this week's spend of an organization's API credit. */
  async account(organizationId: string): Promise<{ balanceMicros: bigint; reservedMicros: bigint; weekSpentMicros: bigint; weekStart: Date }> {
    const state = (await readPool(this.prisma, organizationId, null))!;
    return {
      balanceMicros: state.balanceMicros!,
      reservedMicros: state.reservedMicros + (await this.heldInRedis(organizationId, null)),
      weekSpentMicros: currentSpend(state),
      weekStart: weekStart(),
    };
  }

  /**
   * Sets up a key's pool after its weekly cap or credit share changed (ApiKeyService.update):
   * the row is created on first need, the key's spend this week counted again from the usage
   * records (as setWeeklyCap does for the organization), and its Redis copy replaced, so the
   * next request is held against the new limits on every instance.
   */
  async syncKeyPool(organizationId: string, apiKeyId: string): Promise<void> {
    await this.unmeteredUsage.flush();
    const week = weekStart();
    await this.prisma.$executeRaw`
      INSERT INTO billing_key_pools (api_key_id, organization_id, week_start, week_spent_micros)
      SELECT ${apiKeyId}::uuid, ${organizationId}::uuid, ${week}::timestamptz,
             (SELECT COALESCE(sum(billed_micros), 0) FROM usage_records
              WHERE api_key_id = ${apiKeyId}::uuid AND product IS NULL AND created_at >= ${week}::timestamptz)
      ON CONFLICT (api_key_id) DO UPDATE SET
        version = billing_key_pools.version + 1, week_start = EXCLUDED.week_start, week_spent_micros = EXCLUDED.week_spent_micros`;
    const state = await readKeyPool(this.prisma, apiKeyId);
    const hot = this.hot;
    if (hot && state) await this.onRedis(() => hot.holds.installKey(organizationId, apiKeyId, state));
  }

  /** A key's weekly spend and open holds (null: the key never had a cap or a share). */
  async keyAccount(apiKeyId: string): Promise<{ weekSpentMicros: bigint; reservedMicros: bigint } | null> {
    const state = await readKeyPool(this.prisma, apiKeyId);
    return state && { weekSpentMicros: currentSpend(state), reservedMicros: state.reservedMicros };
  }

  /**
   * Holds `estimateMicros` for a request, or refuses it: API credit needs a positive
   * balance covering open holds plus this estimate, and the weekly cap (when set) must hold
   * this week's spend plus open holds plus this estimate (429 SPENDING_LIMIT_EXCEEDED,
   * checked first: more credit does not clear it). A limited key's pool must hold it too
   * (its cap: 429; its credit share: 402). A coding-agent product draws on its plan's
   * allowance only (402 NO_PLAN / GC_ALLOWANCE_EXHAUSTED with topup_available).
   */
  async reserve(request: ReserveRequest): Promise<Reservation> {
    const reservation: Reservation = {
      id: randomUUID(),
      estimateMicros: request.estimateMicros,
      product: request.product,
      model: request.model,
      kept: 'redis',
      limitedKey: request.product === null && request.limitedKey ? request.apiKeyId : null,
      createdAt: new Date(),
    };
    const inRedis = this.hot ? await this.reserveInRedis(this.hot.holds, request, reservation) : null;
    return inRedis ?? this.reserveInDatabase(request, reservation, 0);
  }

  private async reserveInDatabase(request: ReserveRequest, reservation: Reservation, attempt: number): Promise<Reservation> {
    const limitedKey = reservation.limitedKey;
    const held = await holdInDatabase(this.prisma, { ...request, limitedKey: limitedKey !== null, id: reservation.id, incarnation: this.incarnations.incarnation });
    if (held) return { ...reservation, kept: 'database' };
    const state = await readPool(this.prisma, request.organizationId, request.product);
    if (limitedKey === null || !state) throw refusal(request, state, state?.reservedMicros ?? 0n);
    const key = await readKeyPool(this.prisma, limitedKey);
    // No pool yet (its limits are being set at this moment): the key is not limited yet.
    if (!key) return this.reserveInDatabase(request, { ...reservation, limitedKey: null }, attempt);
    const why = creditOrKeyRefusal({ ...request, product: null }, state, state.reservedMicros, key, key.reservedMicros);
    // Both fit now (a hold settled in between): once more.
    if (why === null && attempt === 0) return this.reserveInDatabase(request, reservation, 1);
    throw why ?? refusal(request, state, state.reservedMicros);
  }

  /**
   * The hold in Redis: the reservation when taken; null when Redis cannot answer (the
   * database takes it). A refusal is confirmed against the database's rows first: a copy
   * older than its row (credit added, a cap raised, by a process that could not tell Redis)
   * is replaced and the hold tried again, so access resumes as soon as credit lands.
   */
  private async reserveInRedis(holds: RedisHolds, r: ReserveRequest, reservation: Reservation): Promise<Reservation | null> {
    let hold = { ...reservation, organizationId: r.organizationId, owner: this.incarnations.incarnation };
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.onRedis(() => holds.reserve(hold, this.incarnations.dead, r.debit));
      if (outcome === null) return null;
      if (outcome.kind === 'ok') return { ...reservation, limitedKey: hold.limitedKey };
      const state = await readPool(this.prisma, r.organizationId, r.product);
      if (!state) throw refusal(r, null, 0n); // no such plan
      const key = hold.limitedKey === null ? null : await readKeyPool(this.prisma, hold.limitedKey);
      // No pool yet (its limits are being set at this moment): the key is not limited yet.
      if (hold.limitedKey !== null && !key) hold = { ...hold, limitedKey: null };
      if (outcome.kind === 'refused' && (state.version <= outcome.version || attempt === 2)) throw refusal(r, state, state.reservedMicros + outcome.heldMicros);
      if (outcome.kind === 'refused_key' && key && (key.version <= outcome.version || attempt === 2)) {
        const why = creditOrKeyRefusal({ ...r, product: null }, state, state.reservedMicros, key, key.reservedMicros + outcome.heldMicros);
        if (why) throw why;
      }
      // A copy that will not stay installed (clocks far apart), or refusals that do not hold: the database decides.
      if (attempt === 2) return null;
      if ((await this.onRedis(() => holds.install(r.organizationId, r.product, state))) === null) return null;
      const limited = hold.limitedKey;
      if (key && limited !== null && (await this.onRedis(() => holds.installKey(r.organizationId, limited, key))) === null) return null;
    }
  }

  /**
   * Records one usage row per upstream attempt that produced something, and, for a
   * charged request, replaces its hold by the actual charge (ledger debit, weekly spend, or
   * the plan's used allowance). Each attempt's `cost_micros` is what that upstream's work
   * costs; the caller is `billed_micros` for one answer: the prompt once (first attempt of a
   * call), then every attempt's completion (a resumed stream's prefix is not billed again).
   */
  async settle(s: SettleRequest): Promise<Settlement> {
    const rows: Prisma.UsageRecordCreateManyInput[] = [];
    const settledAt = new Date();
    let billed = 0n;
    for (const call of s.calls) {
      let first = true;
      for (const attempt of call) {
        if (!attempt.usage) continue;
        const { catalog } = this.catalogs;
        const model = catalog.models.get(attempt.modelId);
        const images = attempt.images ?? 0;
        const cost = costMicros(model, { ...attempt.usage, images });
        const charged = first ? cost : costMicros(model, { promptTokens: 0, completionTokens: attempt.usage.completionTokens, images });
        first = false;
        billed += charged;
        rows.push({
          organizationId: s.organizationId,
          apiKeyId: s.apiKeyId,
          operation: s.operation,
          model: attempt.modelId,
          provider: catalog.deployments.get(attempt.deploymentId)?.provider ?? null,
          inputTokens: attempt.usage.promptTokens,
          outputTokens: attempt.usage.completionTokens,
          images,
          costMicros: cost,
          billedMicros: charged,
          product: s.product,
          reservationId: s.reservation?.id ?? null,
          traceId: s.traceId,
          createdAt: settledAt,
        });
      }
    }
    const hold = s.reservation;
    if (!s.charge && !hold) {
      // Nothing charged, nothing held: written behind (usage-buffer.ts says what a crash can lose).
      if (rows.length > 0) this.unmeteredUsage.add(rows);
      return settlement(s, this.catalogs.catalog, rows, billed);
    }
    const week = weekStart();
    // The balance (or allowance) pays only for prepaid requests; the week's spend counts every
    // request settled here (an unmetered organization's held against its cap too).
    const charge = s.charge ? billed : 0n;
    const state = await this.prisma.$transaction(async (tx) => {
      if (rows.length > 0) await tx.usageRecord.createMany({ data: rows });
      // A database hold is released once: a sweep that already released it leaves nothing to undo.
      let held = 0n;
      let keyHeld = 0n;
      if (hold?.kept === 'database') {
        const released = await tx.$queryRaw<{ estimate_micros: bigint; key_held: boolean }[]>`
          UPDATE billing_reservations SET settled_at = now(), outcome = 'settled'
          WHERE id = ${hold.id}::uuid AND settled_at IS NULL
          RETURNING estimate_micros, key_held`;
        held = released[0] ? BigInt(released[0].estimate_micros) : 0n;
        keyHeld = released[0]?.key_held ? held : 0n;
      } else if (hold) {
        // A Redis hold leaves its record here, settled (what it held, for whom, when).
        await tx.billingReservation.create({
          data: {
            id: hold.id,
            organizationId: s.organizationId,
            apiKeyId: s.apiKeyId,
            operation: s.operation,
            model: hold.model,
            product: s.product,
            estimateMicros: hold.estimateMicros,
            traceId: s.traceId,
            createdAt: hold.createdAt,
            settledAt,
            outcome: 'settled',
            incarnation: this.incarnations.incarnation,
          },
        });
      }
      if (s.product === null) {
        // A key's pool (when it has one) counts what its key spent; its row is locked before
        // the account's, in the order holds take them (database-holds.ts).
        const [keyRow] =
          s.apiKeyId === null
            ? []
            : await tx.$queryRaw<KeyPoolColumns[]>`
                UPDATE billing_key_pools p SET
                  reserved_micros = p.reserved_micros - ${keyHeld}::bigint,
                  week_spent_micros = CASE WHEN p.week_start = ${week}::timestamptz THEN p.week_spent_micros ELSE 0 END + ${billed}::bigint,
                  week_start = ${week}::timestamptz,
                  version = p.version + 1
                FROM api_keys k
                WHERE p.api_key_id = ${s.apiKeyId}::uuid AND k.id = p.api_key_id
                RETURNING ${KEY_POOL_COLUMNS}`;
        if (charge > 0n) {
          await tx.creditLedger.create({ data: { organizationId: s.organizationId, amountMicros: -charge, reason: `usage ${s.operation} ${s.traceId}` } });
        }
        const [row] = await tx.$queryRaw<(AccountColumns & { weekly_cap_micros: bigint | null })[]>`
          UPDATE billing_accounts a SET
            balance_micros = a.balance_micros - ${charge}::bigint,
            reserved_micros = a.reserved_micros - ${held}::bigint,
            week_spent_micros = CASE WHEN a.week_start = ${week}::timestamptz THEN a.week_spent_micros ELSE 0 END + ${billed}::bigint,
            week_start = ${week}::timestamptz,
            version = a.version + 1
          FROM organizations o
          WHERE a.organization_id = ${s.organizationId}::uuid AND o.id = a.organization_id
          RETURNING a.version, a.balance_micros, a.week_spent_micros, a.week_start, a.reserved_micros, o.weekly_cap_micros`;
        return row ? { pool: accountState(row, row.weekly_cap_micros), key: keyRow ? keyPoolState(keyRow) : null } : null;
      }
      // The period turns here too: with Redis holds, settling is the only write of the plan.
      const month = periodStart('month');
      const [row] = await tx.$queryRaw<PlanColumns[]>`
        UPDATE coding_plans SET
          used_micros = CASE WHEN period_start = (CASE WHEN period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END)
                             THEN used_micros ELSE 0 END + ${charge}::bigint,
          period_start = CASE WHEN period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END,
          reserved_micros = reserved_micros - ${held}::bigint,
          version = version + 1
        WHERE organization_id = ${s.organizationId}::uuid AND product = ${s.product}
        RETURNING ${PLAN_COLUMNS}`;
      return row ? { pool: planState(row), key: null } : null;
    });
    if (hold?.kept === 'redis' && state) {
      const holds = this.hot!.holds;
      // Unanswered, the hold stays counted (erring safe) until its process dies or it expires.
      // The key's copy takes its new spend whether or not this hold counted on it (limits set while it ran).
      const limitedKey = state.key ? s.apiKeyId : null;
      await this.onRedis(() => holds.settle({ organizationId: s.organizationId, product: s.product, id: hold.id, limitedKey }, state.pool, state.key));
    }
    return settlement(s, this.catalogs.catalog, rows, billed);
  }

  /**
   * Releases holds whose request can no longer settle (nothing is charged for them: what
   * they produced is unknown and the client got no whole answer): holds taken at least
   * `olderThanMs` ago, and those of dead or replaced processes (instances.ts). One
   * statement for rows and counters. Redis holds of dead processes go with the next hold
   * taken on their pool (redis-holds.ts).
   */
  async reconcile(olderThanMs: number): Promise<number> {
    const released = await releaseHolds(this.prisma, { createdBefore: new Date(Date.now() - olderThanMs), incarnations: this.incarnations.dead });
    if (released > 0) this.logger.warn({ released }, 'released billing holds of requests that never settled (crash or restart)');
    return released;
  }

  /**
   * Records this process (instances.ts) and releases what dead ones held: every open hold
   * on PGlite (one owner per data directory), else those of dead or replaced processes and
   * those older than RESERVATION_TTL_MS; then beats and sweeps every HEARTBEAT_MS.
   */
  async start(soleOwner: boolean): Promise<void> {
    await this.incarnations.register();
    await this.reconcile(soleOwner ? 0 : RESERVATION_TTL_MS);
    this.heartbeat = setInterval(() => {
      this.incarnations
        .beat()
        .then(() => this.reconcile(RESERVATION_TTL_MS))
        .catch((error) => this.logger.error({ err: error }, 'billing heartbeat or reconcile failed'));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** On shutdown: waits for the settlements in flight, writes buffered usage, and leaves the instances. */
  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.drain();
    await this.incarnations.deregister().catch((error) => this.logger.warn({ err: error }, 'could not deregister the billing instance'));
  }

  private readonly pending = new Set<Promise<unknown>>();

  /** Settlements still running after their response closed: shutdown waits for them. */
  background(work: Promise<unknown>): void {
    const tracked = work.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** Waits for the settlements in flight, then writes the buffered usage rows. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
    await this.unmeteredUsage.flush();
  }

  /** Usage in [since, until) per model (or key, or product): what the calls used, cost and were billed. */
  /** Usage lines per group; with a bucket, per bucket and group (each line then has its `start`). */
  async usage(organizationId: string, since: Date, until: Date = new Date(), groupBy: UsageGroup = 'model', bucket?: UsageBucket): Promise<UsageLine[]> {
    // Rows settled in this process are counted even if still buffered (other instances' buffers: ≤ USAGE_FLUSH_MS late).
    await this.unmeteredUsage.flush();
    const start = bucket ? Prisma.sql`(extract(epoch FROM date_trunc(${bucket}, created_at, 'UTC')) * 1000)::bigint` : Prisma.sql`NULL::bigint`;
    const rows = await this.prisma.$queryRaw<{ start: bigint | null; grp: string | null; calls: number; input: bigint; output: bigint; cost: bigint; billed: bigint }[]>`
      SELECT ${start} AS start, ${USAGE_COLUMN[groupBy]} AS grp, COALESCE(sum(calls), 0)::int AS calls,
             COALESCE(sum(input_tokens), 0)::bigint AS input, COALESCE(sum(output_tokens), 0)::bigint AS output,
             COALESCE(sum(cost_micros), 0)::bigint AS cost, COALESCE(sum(billed_micros), 0)::bigint AS billed
      FROM usage_records
      WHERE organization_id = ${organizationId}::uuid AND created_at >= ${since}::timestamptz AND created_at < ${until}::timestamptz
      GROUP BY 1, 2 ORDER BY 1, 2 NULLS LAST`;
    return rows.map((r) => ({
      start: r.start === null ? undefined : Number(r.start),
      group: r.grp,
      calls: r.calls,
      inputTokens: Number(r.input),
      outputTokens: Number(r.output),
      costMicros: BigInt(r.cost),
      billedMicros: BigInt(r.billed),
    }));
  }

  /** The organization's billing state: mode, balance, holds, weekly cap and spend, coding-agent plans. */
  async overview(organizationId: string): Promise<BillingOverview> {
    const [settings, account, rows] = await Promise.all([
      this.readSettings(organizationId),
      this.account(organizationId),
      this.prisma.codingPlan.findMany({ where: { organizationId }, orderBy: { product: 'asc' } }),
    ]);
    const plans = await Promise.all(rows.map(async (p) => ({ ...p, reservedMicros: p.reservedMicros + (await this.heldInRedis(organizationId, p.product)) })));
    return {
      ...settings,
      ...account,
      weekResetsAt: nextWeekStart(),
      codingPlans: plans.map((p) => {
        const period = p.period === 'week' ? 'week' : 'month';
        // A plan whose period has turned shows the new period, as the next request will.
        const current = periodStart(period);
        const fresh = p.periodStart.getTime() === current.getTime();
        return {
          product: p.product,
          period,
          allowanceMicros: p.allowanceMicros,
          usedMicros: fresh ? p.usedMicros : 0n,
          reservedMicros: p.reservedMicros,
          periodStart: current,
          topupAvailable: p.topupAvailable,
        };
      }),
    };
  }

  /** A Redis step of the hot path; null when Redis could not answer (logged once, counted). */
  private onRedis<T>(step: () => Promise<T>): Promise<T | null> {
    return this.hot!.fallback.run(step, async () => null);
  }

  /** Writes a pool's row as just committed to its Redis copy (best effort: a copy also expires). */
  private async installCopy(organizationId: string, product: string | null, state: PoolState): Promise<void> {
    const hot = this.hot;
    if (hot) await this.onRedis(() => hot.holds.install(organizationId, product, state));
  }

  /** What Redis holds of a pool (0 without Redis, or while it cannot answer). */
  private async heldInRedis(organizationId: string, product: string | null): Promise<bigint> {
    const hot = this.hot;
    if (!hot) return 0n;
    return (await this.onRedis(() => hot.holds.held(organizationId, product, this.incarnations.dead))) ?? 0n;
  }
}
