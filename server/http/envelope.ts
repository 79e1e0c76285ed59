// The management API's `{data, meta}` envelope (spec 2.4): every response carries the full
// meta; outside lists there is no further page.
import type { RequestContext } from './handler.js';

export function meta(ctx: RequestContext, page: { hasMore: boolean; nextCursor: string | null } = { hasMore: false, nextCursor: null }) {
  return { requestId: ctx.traceId, hasMore: page.hasMore, nextCursor: page.nextCursor };
}
