// A billing account's side of billing: the organization's mode and weekly cap (cached for
// admission, settings-cache.ts), prepaid credit, coding-agent plans, a limited key's pool,
// and what was used and billed (usage lines, the overview). Every change is a database
// transaction, and a changed pool's Redis copy is replaced so the next hold sees it on every
// instance (hot-copies.ts). Holds themselves are reservations.ts's.
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import { CreditService, ensureBillingAccount, type CreditEntry } from './credit.js';
import type { HotCopies } from './hot-copies.js';
import { ACCOUNT_COLUMNS, accountState, currentSpend, readKeyPool, readPool, type AccountColumns, type PoolState } from './pools.js';
import { nextWeekStart, periodStart, weekStart, type PlanPeriod } from './pricing.js';
import { localSettingsChanges, SettingsCache, type SettingsChanges } from './settings-cache.js';
import type { UsageBuffer } from './usage-buffer.js';

export const BILLING_MODES = ['unmetered', 'prepaid'] as const;
export type BillingMode = (typeof BILLING_MODES)[number];

export interface BillingSettings {
  mode: BillingMode;
  weeklyCapMicros: bigint | null;
}

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

export class BillingAccounts {
  readonly credit: CreditService;
  private readonly cachedSettings: SettingsCache<BillingSettings>;

  constructor(
    private readonly prisma: PrismaClient,
    /** Unmetered usage written behind (shared with the reservations that settle it). */
    private readonly unmeteredUsage: UsageBuffer,
    private readonly hot: HotCopies | null,
    changes: SettingsChanges = localSettingsChanges(),
  ) {
    this.credit = new CreditService(prisma);
    this.cachedSettings = new SettingsCache((organizationId) => this.readSettings(organizationId), changes);
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
    if (hot && state) await hot.run(() => hot.holds.installKey(organizationId, apiKeyId, state));
  }

  /** A key's weekly spend and open holds (null: the key never had a cap or a share). */
  async keyAccount(apiKeyId: string): Promise<{ weekSpentMicros: bigint; reservedMicros: bigint } | null> {
    const state = await readKeyPool(this.prisma, apiKeyId);
    return state && { weekSpentMicros: currentSpend(state), reservedMicros: state.reservedMicros };
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

  private async installCopy(organizationId: string, product: string | null, state: PoolState): Promise<void> {
    await this.hot?.install(organizationId, product, state);
  }

  private async heldInRedis(organizationId: string, product: string | null): Promise<bigint> {
    return this.hot ? this.hot.held(organizationId, product) : 0n;
  }
}
