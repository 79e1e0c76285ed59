// Keyset pagination over (createdAt, id), newest first: a page boundary is a position in
// that order, not an offset, so rows inserted meanwhile never shift or repeat what a client
// has already seen.
import { ApiError } from '../errors.js';
import { storableDate } from './timestamps.js';

export interface PageRequest {
  limit: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

interface Position {
  createdAt: Date;
  id: string;
}

export function encodeCursor(position: Position): string {
  return Buffer.from(`${position.createdAt.toISOString()}|${position.id}`, 'utf8').toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function decodeCursor(cursor: string): Position {
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  // A forged cursor may hold a date the database rejects: that too is an invalid cursor.
  const createdAt = storableDate(iso ?? '');
  if (!id || !UUID.test(id) || !createdAt) {
    throw new ApiError('VALIDATION_ERROR', 'Invalid cursor: pass meta.nextCursor of the previous page', {
      gatewayCode: 'invalid_cursor',
      issues: [{ loc: ['query', 'cursor'], msg: 'Invalid cursor', type: 'value_error', input: cursor }],
    });
  }
  return { createdAt, id };
}

/** Prisma `where`, `orderBy` and `take` for one page. */
export function keysetQuery(page: PageRequest) {
  const after = page.cursor ? decodeCursor(page.cursor) : null;
  return {
    where: after
      ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] }
      : {},
    orderBy: [{ createdAt: 'desc' as const }, { id: 'desc' as const }],
    // One extra row tells whether another page exists.
    take: page.limit + 1,
  };
}

export function toPage<T extends Position>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return { items, hasMore, nextCursor: hasMore ? encodeCursor(items[items.length - 1]) : null };
}
