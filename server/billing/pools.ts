// What a hold draws on: the organization's API credit (balance, and the weekly cap over
// this week's spend) or one coding-agent plan (its allowance over the period's use). The
// database row is the truth; redis-holds.ts keeps a versioned copy for the hot path. Both
// paths refuse with the same errors, worked out here from the same numbers.
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';
import { ensureBillingAccount, formatUsd } from './credit.js';
import { nextWeekStart, periodStart, type PlanPeriod } from './pricing.js';

/** A pool's gate state as one row of the database has it. */
export interface PoolState {
  version: bigint;
  /** API credit: the ledger's balance; a plan has none. */
  balanceMicros: bigint | null;
  /** This week's spend (credit) or the period's used allowance (plan), counted from `periodStart`. */
  spentMicros: bigint;
  periodStart: Date;
  period: PlanPeriod;
  /** What holds kept in the database hold. */
  reservedMicros: bigint;
  /** The weekly cap (credit) or the allowance (plan); null: none. */
  capMicros: bigint | null;
  topupAvailable: boolean;
}

/** The spend of the current period (a period that has turned counts from zero). */
export function currentSpend(state: Pick<PoolState, 'spentMicros' | 'periodStart' | 'period'>, now = new Date()): bigint {
  return state.periodStart.getTime() === periodStart(state.period, now).getTime() ? state.spentMicros : 0n;
}

export interface AccountColumns {
  version: bigint;
  balance_micros: bigint;
  week_spent_micros: bigint;
  week_start: Date;
  reserved_micros: bigint;
}

export interface PlanColumns {
  version: bigint;
  used_micros: bigint;
  period_start: Date;
  period: string;
  reserved_micros: bigint;
  allowance_micros: bigint;
  topup_available: boolean;
}

/** The columns a statement returns for `accountState` / `planState`. */
export const ACCOUNT_COLUMNS = Prisma.raw('version, balance_micros, week_spent_micros, week_start, reserved_micros');
export const PLAN_COLUMNS = Prisma.raw('version, used_micros, period_start, period, reserved_micros, allowance_micros, topup_available');

export function accountState(row: AccountColumns, capMicros: bigint | null): PoolState {
  return {
    version: BigInt(row.version),
    balanceMicros: BigInt(row.balance_micros),
    spentMicros: BigInt(row.week_spent_micros),
    periodStart: row.week_start,
    period: 'week',
    reservedMicros: BigInt(row.reserved_micros),
    capMicros: capMicros === null ? null : BigInt(capMicros),
    topupAvailable: false,
  };
}

export function planState(row: PlanColumns): PoolState {
  return {
    version: BigInt(row.version),
    balanceMicros: null,
    spentMicros: BigInt(row.used_micros),
    periodStart: row.period_start,
    period: row.period === 'week' ? 'week' : 'month',
    reservedMicros: BigInt(row.reserved_micros),
    capMicros: BigInt(row.allowance_micros),
    topupAvailable: row.topup_available,
  };
}

/** The pool's row (credit: the billing account, created on first need); null: no such plan. */
export async function readPool(prisma: PrismaClient, organizationId: string, product: string | null): Promise<PoolState | null> {
  if (product === null) {
    await ensureBillingAccount(prisma, organizationId);
    const [row] = await prisma.$queryRaw<(AccountColumns & { weekly_cap_micros: bigint | null })[]>`
      SELECT a.version, a.balance_micros, a.week_spent_micros, a.week_start, a.reserved_micros, o.weekly_cap_micros
      FROM billing_accounts a JOIN organizations o ON o.id = a.organization_id
      WHERE a.organization_id = ${organizationId}::uuid`;
    return accountState(row, row.weekly_cap_micros);
  }
  const [row] = await prisma.$queryRaw<PlanColumns[]>`
    SELECT ${PLAN_COLUMNS} FROM coding_plans WHERE organization_id = ${organizationId}::uuid AND product = ${product}`;
  return row ? planState(row) : null;
}

/**
 * Why a hold of `estimateMicros` does not fit, given the pool and what all holds hold
 * (`heldMicros`): the weekly cap first (429 SPENDING_LIMIT_EXCEEDED: more credit does not
 * clear it), then the balance (402 INSUFFICIENT_CREDIT); for a plan, no plan (402 NO_PLAN)
 * or a spent allowance (402 GC_ALLOWANCE_EXHAUSTED), both with `topup_available`.
 */
export function refusal(request: { product: string | null; estimateMicros: bigint; debit: boolean }, state: PoolState | null, heldMicros: bigint): ApiError {
  const { product, estimateMicros } = request;
  if (product !== null) {
    if (!state) return new ApiError('NO_PLAN', `The organization has no coding-agent plan for ${product}.`, { topupAvailable: false });
    return new ApiError('GC_ALLOWANCE_EXHAUSTED', `The ${product} plan allowance of ${formatUsd(state.capMicros ?? 0n)} per ${state.period} is spent.`, {
      topupAvailable: state.topupAvailable,
    });
  }
  const s = state!;
  const spent = currentSpend(s);
  // Held against the cap alone (an unmetered organization), only the cap can refuse.
  if (s.capMicros !== null && (spent + heldMicros + estimateMicros > s.capMicros || !request.debit)) {
    return new ApiError(
      'SPENDING_LIMIT_EXCEEDED',
      `The organization's weekly spending cap of ${formatUsd(s.capMicros)} is reached (${formatUsd(spent)} spent this week, ` +
        `${formatUsd(heldMicros)} held by requests in flight); it resets at ${nextWeekStart().toISOString()}.`,
    );
  }
  const available = (s.balanceMicros ?? 0n) - heldMicros;
  return new ApiError(
    'INSUFFICIENT_CREDIT',
    available <= 0n
      ? 'The prepaid balance is empty; add credit to continue.'
      : `The prepaid balance (${formatUsd(available)} available) does not cover this request's estimate of ${formatUsd(estimateMicros)}; ` +
          'add credit or lower max_tokens.',
  );
}
