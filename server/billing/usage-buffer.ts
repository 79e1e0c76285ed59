// Usage rows of requests that charge nothing (unmetered organizations), written behind:
// buffered and inserted in one statement every USAGE_FLUSH_MS or USAGE_FLUSH_ROWS rows,
// instead of one statement per request. Everything in this process that reads usage flushes
// first (BillingService.usage, drain on shutdown), so its reads see every settled request.
// What a crash can lose: the rows buffered since the last flush, at most USAGE_FLUSH_MS of
// unmetered usage. Nothing is charged for those requests and no gate depends on the rows
// (they feed usage reports only), so a crash undercounts a report by a fraction of a second
// and never loses or mis-charges money; prepaid settlement stays one transaction per request.
import type { Logger } from 'pino';
import type { Prisma, PrismaClient } from '../../generated/prisma/client.js';

export const USAGE_FLUSH_MS = 250;
export const USAGE_FLUSH_ROWS = 500;

export class UsageBuffer {
  private rows: Prisma.UsageRecordCreateManyInput[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The last write: flushes run one after another, so a flush ends after every earlier one. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly prisma: Pick<PrismaClient, 'usageRecord'>,
    private readonly logger: Pick<Logger, 'error'>,
    private readonly flushMs = USAGE_FLUSH_MS,
  ) {}

  /** Rows must carry their `createdAt`: they are written up to USAGE_FLUSH_MS later. */
  add(rows: Prisma.UsageRecordCreateManyInput[]): void {
    this.rows.push(...rows);
    if (this.rows.length >= USAGE_FLUSH_ROWS) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes what is buffered; resolves once it (and every earlier flush) is written or given up. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.rows;
    this.rows = [];
    if (batch.length > 0) {
      this.writing = this.writing.then(() =>
        this.prisma.usageRecord.createMany({ data: batch }).then(
          () => undefined,
          // Same outcome as a failed per-request insert was: logged, the request stays answered.
          (error) => this.logger.error({ err: error, rows: batch.length }, 'could not record the usage of unmetered requests'),
        ),
      );
    }
    return this.writing;
  }
}
