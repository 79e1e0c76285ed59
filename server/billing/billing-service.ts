// Metering and the billing gates: every model call is recorded (tokens and cost at the
// catalog's prices, attributed to organization, key and model); a prepaid organization's
// request first reserves its estimate against the balance (or a coding-agent plan's
// allowance) and the weekly cap, and the reservation is settled with the actual charge when
// the request ends. All state is in the database; each gate is one conditional statement,
// so concurrent requests (across instances too) cannot overdraw what was reserved. Off the
// per-request path: the billing mode is cached (settings-cache.ts) and unmetered usage rows
// are written behind in batches (usage-buffer.ts).
import type { Logger } from 'pino';
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';
import type { Catalog } from '../gateway/catalog.js';
import { CreditService, ensureBillingAccount, formatUsd } from './credit.js';
import { costMicros, nextWeekStart, periodStart, weekStart, type PlanPeriod } from './pricing.js';
import type { MeteredAttempt } from '../gateway/usage-scope.js';
import { localSettingsChanges, SettingsCache, type SettingsChanges } from './settings-cache.js';
import { UsageBuffer } from './usage-buffer.js';

export const BILLING_MODES = ['unmetered', 'prepaid'] as const;
export type BillingMode = (typeof BILLING_MODES)[number];

export interface BillingSettings {
  mode: BillingMode;
  weeklyCapMicros: bigint | null;
}

export interface ReserveRequest {
  organizationId: string;
  apiKeyId: string | null;
  operation: string;
  model: string;
  /** Coding-agent product whose allowance pays; null: API credit. */
  product: string | null;
  estimateMicros: bigint;
  traceId: string;
}

export interface Reservation {
  id: string;
  estimateMicros: bigint;
  product: string | null;
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

/** What a usage line totals: a model, an API key, or a coding-agent product (null: API credit). */
export const USAGE_GROUPS = ['model', 'key', 'product'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

const USAGE_COLUMN: Record<UsageGroup, Prisma.Sql> = {
  model: Prisma.raw('model'),
  key: Prisma.raw('api_key_id::text'),
  product: Prisma.raw('product'),
};

export interface UsageLine {
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

/** Open reservations older than this are from a crashed instance: released (nothing charged). */
export const RESERVATION_TTL_MS = 15 * 60_000;

export class BillingService {
  readonly credit: CreditService;
  private readonly cachedSettings: SettingsCache<BillingSettings>;
  private readonly unmeteredUsage: UsageBuffer;

  /** `changes`: how settings changes reach the other instances (default: this process only). */
  constructor(
    private readonly prisma: PrismaClient,
    private readonly catalog: Catalog,
    private readonly logger: Logger,
    changes: SettingsChanges = localSettingsChanges(),
  ) {
    this.credit = new CreditService(prisma);
    this.cachedSettings = new SettingsCache((organizationId) => this.readSettings(organizationId), changes);
    this.unmeteredUsage = new UsageBuffer(prisma, logger);
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

  async setWeeklyCap(organizationId: string, capMicros: bigint | null): Promise<void> {
    await this.prisma.organization.update({ where: { id: organizationId }, data: { weeklyCapMicros: capMicros } });
    await this.cachedSettings.changed(organizationId);
  }

  // Coding plans and credit are not cached: the reservation statement reads them each time.

  async setCodingPlan(organizationId: string, product: string, plan: { allowanceMicros: bigint; topupAvailable: boolean; period?: PlanPeriod }): Promise<void> {
    const data = { allowanceMicros: plan.allowanceMicros, topupAvailable: plan.topupAvailable, period: plan.period ?? 'month' };
    await this.prisma.codingPlan.upsert({
      where: { organizationId_product: { organizationId, product } },
      create: { organizationId, product, ...data },
      update: data,
    });
  }

  /** Balance, open holds and this week's spend of an organization's API credit. */
  async account(organizationId: string): Promise<{ balanceMicros: bigint; reservedMicros: bigint; weekSpentMicros: bigint; weekStart: Date }> {
    await ensureBillingAccount(this.prisma, organizationId);
    const a = await this.prisma.billingAccount.findUniqueOrThrow({ where: { organizationId } });
    const week = weekStart();
    const current = a.weekStart.getTime() === week.getTime();
    return { balanceMicros: a.balanceMicros, reservedMicros: a.reservedMicros, weekSpentMicros: current ? a.weekSpentMicros : 0n, weekStart: week };
  }

  /**
   * Holds `estimateMicros` for a request, or refuses it: API credit needs a positive
   * balance covering open holds plus this estimate, and the weekly cap (when set) must hold
   * this week's spend plus open holds plus this estimate (429 SPENDING_LIMIT_EXCEEDED,
   * checked first: more credit does not clear it). A coding-agent product draws on its
   * plan's allowance only (402 NO_PLAN / GC_ALLOWANCE_EXHAUSTED with topup_available).
   */
  async reserve(request: ReserveRequest): Promise<Reservation> {
    return request.product === null ? this.reserveCredit(request) : this.reserveAllowance(request, request.product);
  }

  private async reserveCredit(r: ReserveRequest): Promise<Reservation> {
    await ensureBillingAccount(this.prisma, r.organizationId);
    const week = weekStart();
    // One statement: the conditional UPDATE locks the account row, so concurrent holds
    // (on any instance) see each other; the CTE inserts the hold only when it succeeded.
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      WITH held AS (
        UPDATE billing_accounts a SET
          reserved_micros = a.reserved_micros + ${r.estimateMicros}::bigint,
          week_spent_micros = CASE WHEN a.week_start = ${week}::timestamptz THEN a.week_spent_micros ELSE 0 END,
          week_start = ${week}::timestamptz
        FROM organizations o
        WHERE a.organization_id = ${r.organizationId}::uuid AND o.id = a.organization_id
          AND a.balance_micros - a.reserved_micros > 0
          AND a.balance_micros - a.reserved_micros - ${r.estimateMicros}::bigint >= 0
          AND (o.weekly_cap_micros IS NULL
               OR (CASE WHEN a.week_start = ${week}::timestamptz THEN a.week_spent_micros ELSE 0 END)
                  + a.reserved_micros + ${r.estimateMicros}::bigint <= o.weekly_cap_micros)
        RETURNING a.organization_id
      )
      INSERT INTO billing_reservations (organization_id, api_key_id, operation, model, product, estimate_micros, trace_id)
      SELECT organization_id, ${r.apiKeyId}::uuid, ${r.operation}, ${r.model}, NULL, ${r.estimateMicros}::bigint, ${r.traceId} FROM held
      RETURNING id`;
    if (rows.length === 1) return { id: rows[0].id, estimateMicros: r.estimateMicros, product: null };

    // The refusal's reason from the database, not the cache: the statement above used the database's cap.
    const [{ weeklyCapMicros }, account] = await Promise.all([this.readSettings(r.organizationId), this.account(r.organizationId)]);
    if (weeklyCapMicros !== null && account.weekSpentMicros + account.reservedMicros + r.estimateMicros > weeklyCapMicros) {
      throw new ApiError(
        'SPENDING_LIMIT_EXCEEDED',
        `The organization's weekly spending cap of ${formatUsd(weeklyCapMicros)} is reached (${formatUsd(account.weekSpentMicros)} spent this week, ` +
          `${formatUsd(account.reservedMicros)} held by requests in flight); it resets at ${nextWeekStart().toISOString()}.`,
      );
    }
    const available = account.balanceMicros - account.reservedMicros;
    throw new ApiError(
      'INSUFFICIENT_CREDIT',
      available <= 0n
        ? 'The prepaid balance is empty; add credit to continue.'
        : `The prepaid balance (${formatUsd(available)} available) does not cover this request's estimate of ${formatUsd(r.estimateMicros)}; ` +
            'add credit or lower max_tokens.',
    );
  }

  private async reserveAllowance(r: ReserveRequest, product: string): Promise<Reservation> {
    const week = weekStart();
    const month = periodStart('month');
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      WITH held AS (
        UPDATE coding_plans p SET
          reserved_micros = p.reserved_micros + ${r.estimateMicros}::bigint,
          used_micros = CASE WHEN p.period_start = (CASE WHEN p.period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END)
                             THEN p.used_micros ELSE 0 END,
          period_start = CASE WHEN p.period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END
        WHERE p.organization_id = ${r.organizationId}::uuid AND p.product = ${product}
          AND (CASE WHEN p.period_start = (CASE WHEN p.period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END)
                    THEN p.used_micros ELSE 0 END) + p.reserved_micros + ${r.estimateMicros}::bigint <= p.allowance_micros
        RETURNING p.organization_id
      )
      INSERT INTO billing_reservations (organization_id, api_key_id, operation, model, product, estimate_micros, trace_id)
      SELECT organization_id, ${r.apiKeyId}::uuid, ${r.operation}, ${r.model}, ${product}, ${r.estimateMicros}::bigint, ${r.traceId} FROM held
      RETURNING id`;
    if (rows.length === 1) return { id: rows[0].id, estimateMicros: r.estimateMicros, product };
    const plan = await this.prisma.codingPlan.findUnique({ where: { organizationId_product: { organizationId: r.organizationId, product } } });
    if (!plan) {
      throw new ApiError('NO_PLAN', `The organization has no coding-agent plan for ${product}.`, { topupAvailable: false });
    }
    throw new ApiError('GC_ALLOWANCE_EXHAUSTED', `The ${product} plan allowance of ${formatUsd(plan.allowanceMicros)} per ${plan.period} is spent.`, {
      topupAvailable: plan.topupAvailable,
    });
  }

  /**
   * Records one usage row per upstream attempt that produced something, and, for a
   * charged request, replaces its hold by the actual charge (ledger debit, weekly spend, or
   * the plan's used allowance). Each attempt's `cost_micros` is what that upstream's work
   * costs; the caller is `billed_micros` for one answer: the prompt once (first attempt of a
   * call), then every attempt's completion (a resumed stream's prefix is not billed again).
   */
  async settle(s: SettleRequest): Promise<{ billedMicros: bigint }> {
    const rows: Prisma.UsageRecordCreateManyInput[] = [];
    const settledAt = new Date();
    let billed = 0n;
    for (const call of s.calls) {
      let first = true;
      for (const attempt of call) {
        if (!attempt.usage) continue;
        const model = this.catalog.models.get(attempt.modelId);
        const cost = costMicros(model, attempt.usage);
        const charged = first ? cost : costMicros(model, { promptTokens: 0, completionTokens: attempt.usage.completionTokens });
        first = false;
        billed += charged;
        rows.push({
          organizationId: s.organizationId,
          apiKeyId: s.apiKeyId,
          operation: s.operation,
          model: attempt.modelId,
          provider: this.catalog.deployments.get(attempt.deploymentId)?.provider ?? null,
          inputTokens: attempt.usage.promptTokens,
          outputTokens: attempt.usage.completionTokens,
          costMicros: cost,
          billedMicros: charged,
          product: s.product,
          reservationId: s.reservation?.id ?? null,
          traceId: s.traceId,
          createdAt: settledAt,
        });
      }
    }
    if (!s.charge && !s.reservation) {
      // Nothing charged, nothing held: written behind (usage-buffer.ts says what a crash can lose).
      if (rows.length > 0) this.unmeteredUsage.add(rows);
      return { billedMicros: billed };
    }
    const week = weekStart();
    await this.prisma.$transaction(async (tx) => {
      if (rows.length > 0) await tx.usageRecord.createMany({ data: rows });
      // The hold is released once: a sweep that already released it leaves nothing to undo.
      let held = 0n;
      if (s.reservation) {
        const released = await tx.$queryRaw<{ estimate_micros: bigint }[]>`
          UPDATE billing_reservations SET settled_at = now(), outcome = 'settled'
          WHERE id = ${s.reservation.id}::uuid AND settled_at IS NULL
          RETURNING estimate_micros`;
        held = released[0] ? BigInt(released[0].estimate_micros) : 0n;
      }
      if (s.product === null) {
        if (s.charge && billed > 0n) {
          await tx.creditLedger.create({ data: { organizationId: s.organizationId, amountMicros: -billed, reason: `usage ${s.operation} ${s.traceId}` } });
        }
        await tx.$executeRaw`
          UPDATE billing_accounts SET
            balance_micros = balance_micros - ${s.charge ? billed : 0n}::bigint,
            reserved_micros = reserved_micros - ${held}::bigint,
            week_spent_micros = CASE WHEN week_start = ${week}::timestamptz THEN week_spent_micros ELSE 0 END + ${s.charge ? billed : 0n}::bigint,
            week_start = ${week}::timestamptz
          WHERE organization_id = ${s.organizationId}::uuid`;
      } else {
        await tx.$executeRaw`
          UPDATE coding_plans SET
            used_micros = used_micros + ${s.charge ? billed : 0n}::bigint,
            reserved_micros = reserved_micros - ${held}::bigint
          WHERE organization_id = ${s.organizationId}::uuid AND product = ${s.product}`;
      }
    });
    return { billedMicros: billed };
  }

  /**
   * Releases holds left open by an instance that died between reserve and settle (nothing
   * is charged for them: what they produced is unknown and the client got no whole answer).
   * At start on PGlite every open hold is such (one owner per data directory); on
   * PostgreSQL, holds older than RESERVATION_TTL_MS, at start and then every minute.
   */
  async reconcile(olderThanMs: number): Promise<number> {
    const cutoff = new Date(Date.now() - olderThanMs);
    const stale = await this.prisma.$queryRaw<{ id: string; organization_id: string; product: string | null; estimate_micros: bigint }[]>`
      UPDATE billing_reservations SET settled_at = now(), outcome = 'released'
      WHERE settled_at IS NULL AND created_at <= ${cutoff}::timestamptz
      RETURNING id, organization_id, product, estimate_micros`;
    for (const r of stale) {
      if (r.product === null) {
        await this.prisma.$executeRaw`UPDATE billing_accounts SET reserved_micros = reserved_micros - ${BigInt(r.estimate_micros)}::bigint WHERE organization_id = ${r.organization_id}::uuid`;
      } else {
        await this.prisma.$executeRaw`UPDATE coding_plans SET reserved_micros = reserved_micros - ${BigInt(r.estimate_micros)}::bigint WHERE organization_id = ${r.organization_id}::uuid AND product = ${r.product}`;
      }
    }
    if (stale.length > 0) this.logger.warn({ released: stale.length }, 'released billing holds of requests that never settled (crash or restart)');
    return stale.length;
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

  startSweeping(intervalMs = 60_000): () => void {
    const timer = setInterval(() => {
      this.reconcile(RESERVATION_TTL_MS).catch((error) => this.logger.error({ err: error }, 'billing reconcile failed'));
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Usage in [since, until) per model (or key, or product): what the calls used, cost and were billed. */
  async usage(organizationId: string, since: Date, until: Date = new Date(), groupBy: UsageGroup = 'model'): Promise<UsageLine[]> {
    // Rows settled in this process are counted even if still buffered (other instances' buffers: ≤ USAGE_FLUSH_MS late).
    await this.unmeteredUsage.flush();
    const rows = await this.prisma.$queryRaw<{ grp: string | null; calls: number; input: bigint; output: bigint; cost: bigint; billed: bigint }[]>`
      SELECT ${USAGE_COLUMN[groupBy]} AS grp, count(*)::int AS calls,
             COALESCE(sum(input_tokens), 0)::bigint AS input, COALESCE(sum(output_tokens), 0)::bigint AS output,
             COALESCE(sum(cost_micros), 0)::bigint AS cost, COALESCE(sum(billed_micros), 0)::bigint AS billed
      FROM usage_records
      WHERE organization_id = ${organizationId}::uuid AND created_at >= ${since}::timestamptz AND created_at < ${until}::timestamptz
      GROUP BY 1 ORDER BY 1 NULLS LAST`;
    return rows.map((r) => ({
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
    const [settings, account, plans] = await Promise.all([
      this.readSettings(organizationId),
      this.account(organizationId),
      this.prisma.codingPlan.findMany({ where: { organizationId }, orderBy: { product: 'asc' } }),
    ]);
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
}
