// What a hold draws on: the organization's API credit (balance, and the weekly cap over
// this week's spend) or one coding-agent plan (its allowance over the period's use); and,
// for a key with limits, the key's own pool besides the credit (its weekly cap, and its
// share of the organization's credit: the key's spend this week stays within that share of
// what the organization had to spend this week, its balance plus its week's spend). The
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
  /** The weekly cap (credit, key) or the allowance (plan); null: none. */
  capMicros: bigint | null;
  /** A key's share of its organization's credit, in percent; null: none (always for credit and plans). */
  sharePercent: number | null;
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
    sharePercent: null,
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
    sharePercent: null,
    topupAvailable: row.topup_available,
  };
}

export interface KeyPoolColumns {
  version: bigint;
  reserved_micros: bigint;
  week_start: Date;
  week_spent_micros: bigint;
  weekly_cap_micros: bigint | null;
  credit_share_percent: number | null;
}

/** The columns of a key pool joined with its key's limits (`p`: billing_key_pools, `k`: api_keys). */
export const KEY_POOL_COLUMNS = Prisma.raw('p.version, p.reserved_micros, p.week_start, p.week_spent_micros, k.weekly_cap_micros, k.credit_share_percent');

export function keyPoolState(row: KeyPoolColumns): PoolState {
  return {
    version: BigInt(row.version),
    balanceMicros: null,
    spentMicros: BigInt(row.week_spent_micros),
    periodStart: row.week_start,
    period: 'week',
    reservedMicros: BigInt(row.reserved_micros),
    capMicros: row.weekly_cap_micros === null ? null : BigInt(row.weekly_cap_micros),
    sharePercent: row.credit_share_percent,
    topupAvailable: false,
  };
}

/** A key's pool with its limits; null when the key never had a cap or a share (no pool). */
export async function readKeyPool(prisma: PrismaClient, apiKeyId: string): Promise<PoolState | null> {
  const [row] = await prisma.$queryRaw<KeyPoolColumns[]>`
    SELECT ${KEY_POOL_COLUMNS} FROM billing_key_pools p JOIN api_keys k ON k.id = p.api_key_id WHERE p.api_key_id = ${apiKeyId}::uuid`;
  return row ? keyPoolState(row) : null;
}

/** Whether a hold of `estimateMicros` fits the organization's credit (its cap, and its balance when that pays). */
function creditFits(request: { estimateMicros: bigint; debit: boolean }, credit: PoolState, heldMicros: bigint): boolean {
  const inFlight = heldMicros + request.estimateMicros;
  if (credit.capMicros !== null && currentSpend(credit) + inFlight > credit.capMicros) return false;
  const available = (credit.balanceMicros ?? 0n) - heldMicros;
  return !request.debit || (available > 0n && available - request.estimateMicros >= 0n);
}

/**
 * Why a hold on the organization's credit and a limited key's pool was refused: the
 * credit's reason when it does not fit, else the key's (null: both fit now, e.g. a hold
 * settled meanwhile).
 */
export function creditOrKeyRefusal(
  request: { product: null; estimateMicros: bigint; debit: boolean },
  credit: PoolState,
  creditHeld: bigint,
  key: PoolState,
  keyHeld: bigint,
): ApiError | null {
  if (!creditFits(request, credit, creditHeld)) return refusal(request, credit, creditHeld);
  return keyRefusal(request, key, keyHeld, credit);
}

/**
 * Why a key's pool refuses a hold of `estimateMicros`, `heldMicros` being what the key's
 * holds hold; null when it fits. The key's weekly cap is 429 SPENDING_LIMIT_EXCEEDED (as the
 * organization's); its credit share (only when the balance pays) is 402 INSUFFICIENT_CREDIT:
 * credit added to the organization widens the share.
 */
export function keyRefusal(request: { estimateMicros: bigint; debit: boolean }, key: PoolState, heldMicros: bigint, credit: PoolState): ApiError | null {
  const used = currentSpend(key) + heldMicros;
  if (key.capMicros !== null && used + request.estimateMicros > key.capMicros) {
    return new ApiError(
      'SPENDING_LIMIT_EXCEEDED',
      `This API key's weekly spending cap of ${formatUsd(key.capMicros)} is reached (${formatUsd(currentSpend(key))} spent this week, ` +
        `${formatUsd(heldMicros)} held by requests in flight); it resets at ${nextWeekStart().toISOString()}.`,
    );
  }
  if (key.sharePercent !== null && request.debit) {
    const weekCredit = (credit.balanceMicros ?? 0n) + currentSpend(credit);
    if ((used + request.estimateMicros) * 100n > BigInt(key.sharePercent) * weekCredit) {
      return new ApiError(
        'INSUFFICIENT_CREDIT',
        `This API key may use ${key.sharePercent}% of the organization's credit this week (${formatUsd((BigInt(key.sharePercent) * weekCredit) / 100n)}); ` +
          `${formatUsd(used)} is spent or held, and this request's estimate is ${formatUsd(request.estimateMicros)}.`,
      );
    }
  }
  return null;
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
