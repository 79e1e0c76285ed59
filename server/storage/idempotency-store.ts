// Remembers the answer to the first POST made with an Idempotency-Key so that its repeats
// get the same answer instead of running again.
import type { Prisma, PrismaClient } from '../../generated/prisma/client.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export type Claim =
  /** First use of the key: run the request, then complete or release the record. */
  | { kind: 'new'; recordId: string }
  | { kind: 'replay'; status: number; body: unknown }
  /** The key was used for a different request. */
  | { kind: 'mismatch' }
  /** The first request with this key is still running. */
  | { kind: 'in_progress' };

export interface ClaimRequest {
  organizationId: string;
  key: string;
  operationId: string;
  requestHash: string;
}

/** The answer kept for a key: what was sent and its size in bytes (caches bound their memory by it). */
export interface Answer {
  status: number;
  body: unknown;
  /** `body` as it was sent, JSON: a store that keeps text keeps this, rather than serializing `body` again. */
  json: string;
  bytes: number;
}

/** Where the idempotency stage keeps its records: the database, or a cache for inference. */
export interface IdempotencyRecords {
  claim(request: ClaimRequest): Promise<Claim>;
  /** What the key's record says about this request, read only; null when the key is free again. */
  inspect(request: ClaimRequest): Promise<Exclude<Claim, { kind: 'new' }> | null>;
  complete(recordId: string, answer: Answer): Promise<void>;
  /** The first request failed in a way a retry may fix: forget it so the retry runs. */
  release(recordId: string): Promise<void>;
}

/** A key's live record compared with a request that reuses the key. */
export function verdict(
  record: { operationId: string; requestHash: string; status: number | null; body?: unknown },
  request: ClaimRequest,
): Exclude<Claim, { kind: 'new' }> {
  if (record.requestHash !== request.requestHash || record.operationId !== request.operationId) return { kind: 'mismatch' };
  if (record.status === null) return { kind: 'in_progress' };
  return { kind: 'replay', status: record.status, body: record.body };
}

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === 'P2002';

/** Records in the database, kept a day: for operations whose effects are durable too. */
export class IdempotencyStore implements IdempotencyRecords {
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly ttlMs = IDEMPOTENCY_TTL_MS,
  ) {}

  async claim(request: ClaimRequest, attempt = 0): Promise<Claim> {
    try {
      const record = await this.prisma.idempotencyRecord.create({
        data: { ...request, expiresAt: new Date(Date.now() + this.ttlMs) },
        select: { id: true },
      });
      return { kind: 'new', recordId: record.id };
    } catch (error) {
      if (!isUniqueViolation(error) || attempt > 2) throw error;
    }
    return (await this.inspect(request)) ?? this.claim(request, attempt + 1);
  }

  async inspect(request: ClaimRequest): Promise<Exclude<Claim, { kind: 'new' }> | null> {
    const existing = await this.prisma.idempotencyRecord.findUnique({
      where: { organizationId_key: { organizationId: request.organizationId, key: request.key } },
    });
    // Gone (released) or expired meanwhile: the key is free again.
    if (!existing || existing.expiresAt.getTime() <= Date.now()) {
      if (existing) await this.prisma.idempotencyRecord.deleteMany({ where: { id: existing.id, expiresAt: existing.expiresAt } });
      return null;
    }
    return verdict({ ...existing, status: existing.responseStatus, body: existing.responseBody }, request);
  }

  async complete(recordId: string, { status, body }: Answer): Promise<void> {
    await this.prisma.idempotencyRecord.update({
      where: { id: recordId },
      data: { responseStatus: status, responseBody: body as Prisma.InputJsonValue },
    });
  }

  async release(recordId: string): Promise<void> {
    await this.prisma.idempotencyRecord.deleteMany({ where: { id: recordId } });
  }

  /** Deletes expired records every `intervalMs`, so the table holds about one day of keys. */
  startSweeping(intervalMs = 10 * 60 * 1000): void {
    this.sweeper = setInterval(() => {
      this.prisma.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: new Date() } } }).catch(() => undefined);
    }, intervalMs);
    this.sweeper.unref();
  }

  stopSweeping(): void {
    clearInterval(this.sweeper);
  }
}
