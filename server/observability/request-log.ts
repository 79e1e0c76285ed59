// The request log (the console's "requests" page, GET /api/v1/requests and its figures over
// time): rows written behind by RequestLogWriter, read here, always within one organization.
import { Prisma, type PrismaClient } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';
import type { Page } from '../storage/pagination.js';
import { RequestLogWriter, type RequestLogRow } from './request-log-writer.js';
import type { Logger } from 'pino';

export interface RequestLogFilter {
  since?: Date;
  until?: Date;
  model?: string;
  provider?: string;
  /** `ok` (below 400), `error` (400 and up) or one status. */
  status?: string;
  traceId?: string;
}

export type LoggedRequest = Omit<RequestLogRow, 'organizationId' | 'at'> & { id: bigint; at: Date };

export interface RequestFigures {
  requests: number;
  errors: number;
  p50Ms: number;
  p95Ms: number;
  inputTokens: number;
  outputTokens: number;
  costMicros: bigint;
}

export interface RequestStats {
  buckets: (RequestFigures & { start: number })[];
  models: (RequestFigures & { model: string | null; provider: string | null })[];
}

const FIGURES = Prisma.sql`
  count(*)::int AS requests, count(*) FILTER (WHERE status >= 400)::int AS errors,
  COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms), 0)::float8 AS p50,
  COALESCE(percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms), 0)::float8 AS p95,
  COALESCE(sum(input_tokens), 0)::bigint AS input, COALESCE(sum(output_tokens), 0)::bigint AS output,
  COALESCE(sum(cost_micros), 0)::bigint AS cost`;

interface FigureColumns {
  requests: number;
  errors: number;
  p50: number;
  p95: number;
  input: bigint;
  output: bigint;
  cost: bigint;
}

const figures = (r: FigureColumns): RequestFigures => ({
  requests: r.requests,
  errors: r.errors,
  p50Ms: Math.round(r.p50 * 10) / 10,
  p95Ms: Math.round(r.p95 * 10) / 10,
  inputTokens: Number(r.input),
  outputTokens: Number(r.output),
  costMicros: BigInt(r.cost),
});

export class RequestLog {
  readonly writer: RequestLogWriter;

  constructor(
    private readonly prisma: PrismaClient,
    logger: Logger,
    /** 0: nothing is kept, so nothing is recorded. */
    readonly retentionMs: number,
    /** Whether request bodies (prompts) are kept. */
    readonly keepBodies: boolean,
  ) {
    this.writer = new RequestLogWriter(prisma, logger, retentionMs);
  }

  get enabled(): boolean {
    return this.retentionMs > 0;
  }

  record(row: RequestLogRow): void {
    this.writer.add(row);
  }

  async list(organizationId: string, filter: RequestLogFilter, page: { limit: number; cursor?: string }): Promise<Page<LoggedRequest>> {
    // Rows this process finished are listed even if still pending (other instances': ≤ 1 s late).
    await this.writer.flush();
    const conditions = [Prisma.sql`organization_id = ${organizationId}::uuid`, ...this.conditions(filter)];
    if (page.cursor) conditions.push(Prisma.sql`id < ${decodeCursor(page.cursor)}::bigint`);
    const rows = await this.prisma.$queryRaw<LoggedRequest[]>`
      SELECT id, api_key_id AS "apiKeyId", trace_id AS "traceId", at, method, path, operation, status, latency_ms AS "latencyMs",
             route, model, provider, input_tokens AS "inputTokens", output_tokens AS "outputTokens", cost_micros AS "costMicros",
             error, request_body AS "requestBody"
      FROM request_log WHERE ${Prisma.join(conditions, ' AND ')}
      ORDER BY id DESC LIMIT ${page.limit + 1}`;
    const items = rows.slice(0, page.limit);
    const hasMore = rows.length > page.limit;
    return { items, hasMore, nextCursor: hasMore ? encodeCursor(items[items.length - 1].id) : null };
  }

  async stats(organizationId: string, since: Date, until: Date, bucket: 'hour' | 'day'): Promise<RequestStats> {
    await this.writer.flush();
    const where = Prisma.sql`organization_id = ${organizationId}::uuid AND at >= ${since}::timestamptz AND at < ${until}::timestamptz`;
    const [buckets, models] = await Promise.all([
      this.prisma.$queryRaw<(FigureColumns & { start: bigint })[]>`
        SELECT (extract(epoch FROM date_trunc(${bucket}, at, 'UTC')) * 1000)::bigint AS start, ${FIGURES}
        FROM request_log WHERE ${where} GROUP BY 1 ORDER BY 1`,
      this.prisma.$queryRaw<(FigureColumns & { model: string | null; provider: string | null })[]>`
        SELECT model, provider, ${FIGURES}
        FROM request_log WHERE ${where} GROUP BY 1, 2 ORDER BY requests DESC, 1 NULLS LAST`,
    ]);
    return {
      buckets: buckets.map((r) => ({ start: Number(r.start), ...figures(r) })),
      models: models.map((r) => ({ model: r.model, provider: r.provider, ...figures(r) })),
    };
  }

  private conditions(filter: RequestLogFilter): Prisma.Sql[] {
    const out: Prisma.Sql[] = [];
    if (filter.since) out.push(Prisma.sql`at >= ${filter.since}::timestamptz`);
    if (filter.until) out.push(Prisma.sql`at < ${filter.until}::timestamptz`);
    if (filter.model) out.push(Prisma.sql`model = ${filter.model}`);
    if (filter.provider) out.push(Prisma.sql`provider = ${filter.provider}`);
    if (filter.traceId) out.push(Prisma.sql`trace_id = ${filter.traceId}`);
    if (filter.status === 'ok') out.push(Prisma.sql`status < 400`);
    else if (filter.status === 'error') out.push(Prisma.sql`status >= 400`);
    else if (filter.status) out.push(Prisma.sql`status = ${Number(filter.status)}::int`);
    return out;
  }
}

const encodeCursor = (id: bigint) => Buffer.from(`req:${id}`, 'utf8').toString('base64url');

function decodeCursor(cursor: string): string {
  const match = /^req:(\d{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) {
    throw new ApiError('VALIDATION_ERROR', 'Invalid cursor: pass meta.nextCursor of the previous page', {
      gatewayCode: 'invalid_cursor',
      issues: [{ loc: ['query', 'cursor'], msg: 'Invalid cursor', type: 'value_error', input: cursor }],
    });
  }
  return match[1];
}
