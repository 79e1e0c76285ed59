// Holds kept in the database: without Redis, or while it cannot answer. Taking one is one
// statement (the conditional UPDATE locks the pool's row, so concurrent holds on any
// instance see each other; the CTE records the hold only when it succeeded), and so is
// releasing the holds of dead processes: the rows and the pools' counters change together
// or not at all. A limited key's hold takes its key pool's row too, in the same statement:
// the key's row is locked first (then the account's, as settling does), its cap and credit
// share checked with the account's, and both counters move only when both fit.
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import { periodStart, weekStart } from './pricing.js';

/** What admission asks to hold for a request. */
export interface ReserveRequest {
  organizationId: string;
  apiKeyId: string | null;
  operation: string;
  model: string;
  /** Coding-agent product whose allowance pays; null: API credit. */
  product: string | null;
  estimateMicros: bigint;
  traceId: string;
  /**
   * Whether the balance pays (prepaid); false: an unmetered organization's request, held
   * against its weekly cap alone.
   */
  debit: boolean;
  /** The key has a weekly cap or a credit share: the hold counts on its key pool too (pools.ts). */
  limitedKey: boolean;
}

export interface DatabaseHold extends ReserveRequest {
  id: string;
  /** The process taking it (instances.ts). */
  incarnation: string;
}

/**
 * Takes the hold when it fits (API credit: a positive balance covering the open holds plus
 * this one when it pays, and the weekly cap over this week's spend plus the holds; a plan: its allowance
 * over the period's use plus the holds); false when it does not (or no plan exists).
 */
export async function holdInDatabase(prisma: PrismaClient, h: DatabaseHold): Promise<boolean> {
  const week = weekStart();
  if (h.product === null) {
    const key = h.limitedKey && h.apiKeyId !== null;
    const rows = await prisma.$queryRaw<{ id: string }[]>`
      WITH ${key ? keyLocked(h.apiKeyId!, week) : Prisma.empty} held AS (
        UPDATE billing_accounts a SET
          reserved_micros = a.reserved_micros + ${h.estimateMicros}::bigint,
          week_spent_micros = CASE WHEN a.week_start = ${week}::timestamptz THEN a.week_spent_micros ELSE 0 END,
          week_start = ${week}::timestamptz,
          version = a.version + 1
        FROM organizations o ${key ? Prisma.sql`, kp` : Prisma.empty}
        WHERE a.organization_id = ${h.organizationId}::uuid AND o.id = a.organization_id
          AND (NOT ${h.debit}::boolean OR (a.balance_micros - a.reserved_micros > 0
               AND a.balance_micros - a.reserved_micros - ${h.estimateMicros}::bigint >= 0))
          AND (o.weekly_cap_micros IS NULL
               OR (CASE WHEN a.week_start = ${week}::timestamptz THEN a.week_spent_micros ELSE 0 END)
                  + a.reserved_micros + ${h.estimateMicros}::bigint <= o.weekly_cap_micros)
          ${key ? keyFits(h, week) : Prisma.empty}
        RETURNING a.organization_id
      )${key ? keyCounted(h, week) : Prisma.empty}
      INSERT INTO billing_reservations (id, organization_id, api_key_id, operation, model, product, estimate_micros, trace_id, incarnation, key_held)
      SELECT ${h.id}::uuid, organization_id, ${h.apiKeyId}::uuid, ${h.operation}, ${h.model}, NULL, ${h.estimateMicros}::bigint, ${h.traceId}, ${h.incarnation}::uuid, ${key}::boolean
      FROM held
      RETURNING id`;
    return rows.length === 1;
  }
  const month = periodStart('month');
  const rows = await prisma.$queryRaw<{ id: string }[]>`
    WITH held AS (
      UPDATE coding_plans p SET
        reserved_micros = p.reserved_micros + ${h.estimateMicros}::bigint,
        used_micros = CASE WHEN p.period_start = (CASE WHEN p.period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END)
                           THEN p.used_micros ELSE 0 END,
        period_start = CASE WHEN p.period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END,
        version = p.version + 1
      WHERE p.organization_id = ${h.organizationId}::uuid AND p.product = ${h.product}
        AND (CASE WHEN p.period_start = (CASE WHEN p.period = 'week' THEN ${week}::timestamptz ELSE ${month}::timestamptz END)
                  THEN p.used_micros ELSE 0 END) + p.reserved_micros + ${h.estimateMicros}::bigint <= p.allowance_micros
      RETURNING p.organization_id
    )
    INSERT INTO billing_reservations (id, organization_id, api_key_id, operation, model, product, estimate_micros, trace_id, incarnation)
    SELECT ${h.id}::uuid, organization_id, ${h.apiKeyId}::uuid, ${h.operation}, ${h.model}, ${h.product}, ${h.estimateMicros}::bigint, ${h.traceId}, ${h.incarnation}::uuid FROM held
    RETURNING id`;
  return rows.length === 1;
}

/** The key's pool row, locked before the account's (settling locks in the same order), with its limits. */
function keyLocked(apiKeyId: string, week: Date): Prisma.Sql {
  return Prisma.sql`kp AS (
      SELECT p.reserved_micros, CASE WHEN p.week_start = ${week}::timestamptz THEN p.week_spent_micros ELSE 0 END AS spent,
             k.weekly_cap_micros AS cap, k.credit_share_percent AS share
      FROM billing_key_pools p JOIN api_keys k ON k.id = p.api_key_id
      WHERE p.api_key_id = ${apiKeyId}::uuid
      FOR UPDATE OF p
    ),`;
}

/** The key's cap over its week's spend and holds, and (when the balance pays) its share of the week's credit (balance + week's spend). */
function keyFits(h: DatabaseHold, week: Date): Prisma.Sql {
  const used = Prisma.sql`kp.spent + kp.reserved_micros + ${h.estimateMicros}::bigint`;
  return Prisma.sql`
          AND (kp.cap IS NULL OR ${used} <= kp.cap)
          AND (NOT ${h.debit}::boolean OR kp.share IS NULL
               OR (${used}) * 100 <= kp.share * (a.balance_micros + CASE WHEN a.week_start = ${week}::timestamptz THEN a.week_spent_micros ELSE 0 END))`;
}

/** Counts the hold on the key's pool once the account took it (a data-modifying CTE runs whether or not it is read). */
function keyCounted(h: DatabaseHold, week: Date): Prisma.Sql {
  return Prisma.sql`,
      key_held AS (
        UPDATE billing_key_pools p SET
          reserved_micros = p.reserved_micros + ${h.estimateMicros}::bigint,
          week_spent_micros = CASE WHEN p.week_start = ${week}::timestamptz THEN p.week_spent_micros ELSE 0 END,
          week_start = ${week}::timestamptz,
          version = p.version + 1
        FROM held WHERE p.api_key_id = ${h.apiKeyId}::uuid
        RETURNING 1
      )`;
}

export interface ReleaseRule {
  /** Open holds taken at or before this time (the longest request is over). */
  createdBefore: Date;
  /** Open holds of these incarnations (dead or replaced processes). */
  incarnations: readonly string[];
}

/**
 * Releases (nothing charged) the open holds the rule names and takes them off their pools'
 * counters (keys' pools too), in one statement: a crash midway leaves both as they were.
 * Answers how many.
 */
export async function releaseHolds(prisma: PrismaClient, rule: ReleaseRule): Promise<number> {
  const [{ released }] = await prisma.$queryRaw<{ released: number }[]>`
    WITH released AS (
      UPDATE billing_reservations SET settled_at = now(), outcome = 'released'
      WHERE settled_at IS NULL
        AND (created_at <= ${rule.createdBefore}::timestamptz OR incarnation = ANY(${[...rule.incarnations]}::uuid[]))
      RETURNING organization_id, api_key_id, product, estimate_micros, key_held
    ),
    keys AS (
      UPDATE billing_key_pools p SET reserved_micros = p.reserved_micros - r.held, version = p.version + 1
      FROM (SELECT api_key_id, sum(estimate_micros) AS held FROM released WHERE key_held GROUP BY api_key_id) r
      WHERE p.api_key_id = r.api_key_id
      RETURNING 1
    ),
    credit AS (
      UPDATE billing_accounts a SET reserved_micros = a.reserved_micros - r.held, version = a.version + 1
      FROM (SELECT organization_id, sum(estimate_micros) AS held FROM released WHERE product IS NULL GROUP BY organization_id) r
      WHERE a.organization_id = r.organization_id
      RETURNING 1
    ),
    plans AS (
      UPDATE coding_plans p SET reserved_micros = p.reserved_micros - r.held, version = p.version + 1
      FROM (SELECT organization_id, product, sum(estimate_micros) AS held FROM released WHERE product IS NOT NULL GROUP BY organization_id, product) r
      WHERE p.organization_id = r.organization_id AND p.product = r.product
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM released)::int AS released`;
  return released;
}
