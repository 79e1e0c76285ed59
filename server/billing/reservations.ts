// Reserve-then-settle, the request's side of billing: a prepaid organization's request first
// holds its estimate against the balance (or a coding-agent plan's allowance), the weekly cap
// and a limited key's pool; the hold is settled with the actual charge when the request ends,
// and every model call is recorded (tokens and cost at the catalog's prices, attributed to
// organization, key and model). A hold is taken in one atomic step, so concurrent requests
// (across instances too) cannot overdraw what is held: a script in Redis when REDIS_URL is set
// (redis-holds.ts: no database transaction on the request's path), else one conditional
// statement in the database (database-holds.ts), which is also the fallback while Redis
// cannot answer. Holds of a process that died are released (instances.ts). Unmetered usage
// rows are written behind in batches (usage-buffer.ts).
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import type { Catalog } from '../gateway/catalog.js';
import { routeOf } from '../gateway/route-header.js';
import type { MeteredAttempt } from '../gateway/usage-scope.js';
import { holdInDatabase, releaseHolds, type ReserveRequest } from './database-holds.js';
import type { HotCopies } from './hot-copies.js';
import { HEARTBEAT_MS, RESERVATION_TTL_MS, type Incarnations } from './instances.js';
import {
  creditOrKeyRefusal,
  KEY_POOL_COLUMNS,
  keyPoolState,
  PLAN_COLUMNS,
  planState,
  readKeyPool,
  readPool,
  refusal,
  accountState,
  type AccountColumns,
  type KeyPoolColumns,
  type PlanColumns,
} from './pools.js';
import { costMicros, periodStart, weekStart } from './pricing.js';
import type { RedisHolds } from './redis-holds.js';
import type { UsageBuffer } from './usage-buffer.js';

export { RESERVATION_TTL_MS, type ReserveRequest };

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

export class Reservations {
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    /** The catalog now (the gateway's: a reload changes it), for the prices usage is billed at. */
    private readonly catalogs: { readonly catalog: Catalog },
    private readonly logger: Logger,
    private readonly unmeteredUsage: UsageBuffer,
    private readonly incarnations: Incarnations,
    private readonly hot: HotCopies | null,
  ) {}

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
      const outcome = await this.hot!.run(() => holds.reserve(hold, this.incarnations.dead, r.debit));
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
      if ((await this.hot!.run(() => holds.install(r.organizationId, r.product, state))) === null) return null;
      const limited = hold.limitedKey;
      if (key && limited !== null && (await this.hot!.run(() => holds.installKey(r.organizationId, limited, key))) === null) return null;
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
      await this.hot!.run(() => holds.settle({ organizationId: s.organizationId, product: s.product, id: hold.id, limitedKey }, state.pool, state.key));
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
}
