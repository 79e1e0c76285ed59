// The request log's writes: off the request path and batched. A finished request is a row in
// memory; every REQUEST_LOG_FLUSH_MS (or once REQUEST_LOG_FLUSH_ROWS are pending) the rows go
// to the database as one INSERT … SELECT FROM unnest(column arrays), so a request never waits
// for, or pays for, a write of its own. A crash loses at most one interval of log rows, never
// anything that bills or gates (the usage records are billing's, written on their own).
// A sweep deletes rows older than the retention.
import type { Logger } from 'pino';
import type { PrismaClient } from '../../generated/prisma/client.js';
import { WriteBehind } from '../storage/write-behind.js';

export const REQUEST_LOG_FLUSH_MS = 1_000;
export const REQUEST_LOG_FLUSH_ROWS = 500;
/** Beyond this many pending rows (the database is down or slow) new rows are dropped, not queued without end. */
export const REQUEST_LOG_MAX_PENDING = 20_000;
const SWEEP_INTERVAL_MS = 10 * 60 * 1000;

export interface RequestLogRow {
  organizationId: string;
  apiKeyId: string | null;
  traceId: string;
  at: Date;
  method: string;
  path: string;
  operation: string | null;
  status: number;
  latencyMs: number;
  route: string | null;
  model: string | null;
  provider: string | null;
  inputTokens: number;
  outputTokens: number;
  costMicros: bigint;
  error: string | null;
  requestBody: string | null;
}

export class RequestLogWriter {
  private rows: RequestLogRow[] = [];
  private sweeper: NodeJS.Timeout | null = null;
  private dropped = 0;
  private readonly behind: WriteBehind<RequestLogRow[]>;

  constructor(
    private readonly prisma: Pick<PrismaClient, '$executeRaw'>,
    private readonly logger: Pick<Logger, 'error' | 'warn'>,
    private readonly retentionMs: number,
    flushMs = REQUEST_LOG_FLUSH_MS,
  ) {
    this.behind = new WriteBehind(
      () => this.take(),
      (batch) => insertRows(prisma, batch),
      (error, batch) => logger.error({ err: error, rows: batch.length }, 'could not write the request log'),
      flushMs,
    );
  }

  add(row: RequestLogRow): void {
    if (this.rows.length >= REQUEST_LOG_MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.rows.push(row);
    this.behind.added(this.rows.length >= REQUEST_LOG_FLUSH_ROWS);
  }

  /** Writes what is pending; resolves once it (and every earlier flush) is written or given up. */
  flush(): Promise<void> {
    return this.behind.flush();
  }

  private take(): RequestLogRow[] | null {
    if (this.dropped > 0) {
      this.logger.warn({ dropped: this.dropped }, 'request log rows dropped: the database did not keep up');
      this.dropped = 0;
    }
    const batch = this.rows;
    this.rows = [];
    return batch.length > 0 ? batch : null;
  }

  /** Deletes the rows past the retention now, then every SWEEP_INTERVAL_MS. */
  startSweeping(intervalMs = SWEEP_INTERVAL_MS): void {
    const sweep = () =>
      void this.sweep().catch((error: unknown) => this.logger.error({ err: error }, 'could not sweep the request log'));
    sweep();
    this.sweeper = setInterval(sweep, intervalMs);
    this.sweeper.unref();
  }

  async sweep(): Promise<number> {
    const before = new Date(Date.now() - this.retentionMs).toISOString();
    return this.prisma.$executeRaw`DELETE FROM request_log WHERE at < ${before}::timestamptz`;
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await this.flush();
  }
}

function insertRows(prisma: Pick<PrismaClient, '$executeRaw'>, rows: RequestLogRow[]): Promise<number> {
  const column = <T>(pick: (row: RequestLogRow) => T) => rows.map(pick);
  return prisma.$executeRaw`
    INSERT INTO request_log (organization_id, api_key_id, trace_id, at, method, path, operation, status, latency_ms, route,
                             model, provider, input_tokens, output_tokens, cost_micros, error, request_body)
    SELECT * FROM unnest(
      ${column((r) => r.organizationId)}::uuid[], ${column((r) => r.apiKeyId)}::uuid[], ${column((r) => r.traceId)}::text[],
      ${column((r) => r.at.toISOString())}::timestamptz[], ${column((r) => r.method)}::text[], ${column((r) => r.path)}::text[],
      ${column((r) => r.operation)}::text[], ${column((r) => r.status)}::int[], ${column((r) => r.latencyMs)}::float8[],
      ${column((r) => r.route)}::text[], ${column((r) => r.model)}::text[], ${column((r) => r.provider)}::text[],
      ${column((r) => r.inputTokens)}::int[], ${column((r) => r.outputTokens)}::int[], ${column((r) => String(r.costMicros))}::bigint[],
      ${column((r) => r.error)}::text[], ${column((r) => r.requestBody)}::text[]
    )`;
}
