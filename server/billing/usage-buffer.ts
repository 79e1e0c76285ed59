// Usage of requests that charge nothing (unmetered organizations), written behind and rolled
// up: the requests of one organization, key, operation, model, provider and product that
// settle within the same second of the clock are one row, counting them in `calls` and
// summing their tokens, images and cost (`trace_id` is kept when the row is one request's).
// A report whose bounds fall on whole seconds (every report the API builds: since/until in
// ms, weeks from Monday 00:00) counts each row exactly as it would count its requests. Rows
// are written in one statement every USAGE_FLUSH_MS, or once USAGE_FLUSH_ROWS rows are
// pending. Everything in this process that reads usage flushes first (BillingService.usage,
// drain on shutdown), so its reads see every settled request.
// What a crash can lose: what was buffered since the last flush, at most USAGE_FLUSH_MS of
// unmetered usage. Nothing is charged for those requests and no gate depends on the rows
// (they feed usage reports only), so a crash undercounts a report by a fraction of a second
// and never loses or mis-charges money; prepaid settlement stays one transaction (and one
// row) per request.
//
// Why roll up: a row costs ~25 µs of PGlite's CPU, in the server's own process, even
// batched (measured: unnest or COPY, with or without the indexes and foreign keys, never
// under 12 µs), which was a tenth of a gateway request's whole CPU; under load the requests
// of a second share a few rows.
//
// The batch goes as one INSERT … SELECT FROM unnest(column arrays): a statement of 15 array
// parameters whatever the batch size (Prisma's createMany validates and serializes every
// row in JavaScript).
import type { Logger } from 'pino';
import type { Prisma, PrismaClient } from '../../generated/prisma/client.js';
import { WriteBehind } from '../storage/write-behind.js';

export const USAGE_FLUSH_MS = 250;
export const USAGE_FLUSH_ROWS = 500;

type UsageRow = Prisma.UsageRecordCreateManyInput;

/** Rows that may share one row: the same columns but the counts, within one second. */
function rollupKey(row: UsageRow, at: number): string {
  // NUL cannot occur in any of these (ids, catalog names, text the database accepted).
  return [row.organizationId, row.apiKeyId, row.operation, row.model, row.provider, row.product, row.reservationId, Math.floor(at / 1000)].join('\0');
}

export class UsageBuffer {
  private rows = new Map<string, UsageRow & { createdAt: Date; calls: number }>();
  private readonly behind: WriteBehind<UsageRow[]>;

  constructor(prisma: Pick<PrismaClient, '$executeRaw'>, logger: Pick<Logger, 'error'>, flushMs = USAGE_FLUSH_MS) {
    this.behind = new WriteBehind(
      () => {
        const batch: UsageRow[] = [...this.rows.values()];
        this.rows = new Map();
        return batch.length > 0 ? batch : null;
      },
      (batch) => insertUsageRows(prisma, batch),
      // Same outcome as a failed per-request insert was: logged, the request stays answered.
      (error, batch) => logger.error({ err: error, rows: batch.length }, 'could not record the usage of unmetered requests'),
      flushMs,
    );
  }

  /** One row per request (attempt); rows must carry their `createdAt`: they are written up to USAGE_FLUSH_MS later. */
  add(rows: UsageRow[]): void {
    for (const row of rows) {
      const createdAt = new Date(row.createdAt ?? Date.now());
      const key = rollupKey(row, createdAt.getTime());
      const pending = this.rows.get(key);
      if (!pending) {
        this.rows.set(key, { ...row, createdAt, calls: row.calls ?? 1 });
        continue;
      }
      pending.calls += row.calls ?? 1;
      pending.inputTokens = (pending.inputTokens ?? 0) + (row.inputTokens ?? 0);
      pending.outputTokens = (pending.outputTokens ?? 0) + (row.outputTokens ?? 0);
      pending.images = (pending.images ?? 0) + (row.images ?? 0);
      pending.costMicros = BigInt(pending.costMicros ?? 0) + BigInt(row.costMicros ?? 0);
      pending.billedMicros = BigInt(pending.billedMicros ?? 0) + BigInt(row.billedMicros ?? 0);
      pending.traceId = null;
      if (createdAt < pending.createdAt) pending.createdAt = createdAt;
    }
    this.behind.added(this.rows.size >= USAGE_FLUSH_ROWS);
  }

  /** Writes what is buffered; resolves once it (and every earlier flush) is written or given up. */
  flush(): Promise<void> {
    return this.behind.flush();
  }
}

/** The rows as one statement, column by column (absent optional fields take their defaults). */
export function insertUsageRows(prisma: Pick<PrismaClient, '$executeRaw'>, rows: UsageRow[]): Promise<number> {
  const column = <T>(pick: (row: UsageRow) => T) => rows.map(pick);
  return prisma.$executeRaw`
    INSERT INTO usage_records (organization_id, api_key_id, operation, model, provider, input_tokens, output_tokens, images,
                               cost_micros, billed_micros, product, reservation_id, trace_id, created_at, calls)
    SELECT * FROM unnest(
      ${column((r) => r.organizationId)}::uuid[], ${column((r) => r.apiKeyId ?? null)}::uuid[], ${column((r) => r.operation)}::text[],
      ${column((r) => r.model ?? null)}::text[], ${column((r) => r.provider ?? null)}::text[], ${column((r) => r.inputTokens ?? 0)}::int[],
      ${column((r) => r.outputTokens ?? 0)}::int[], ${column((r) => r.images ?? 0)}::int[],
      ${column((r) => String(r.costMicros ?? 0))}::bigint[], ${column((r) => String(r.billedMicros ?? 0))}::bigint[],
      ${column((r) => r.product ?? null)}::text[], ${column((r) => r.reservationId ?? null)}::uuid[], ${column((r) => r.traceId ?? null)}::text[],
      ${column((r) => new Date(r.createdAt ?? Date.now()).toISOString())}::timestamptz[], ${column((r) => r.calls ?? 1)}::int[]
    )`;
}
