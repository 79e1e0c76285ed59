// The management API's `{data, meta}` envelope (spec 2.4).
import type { RequestContext } from './handler.js';

export function meta(ctx: RequestContext) {
  return { requestId: ctx.traceId };
}

export function listMeta(ctx: RequestContext, page: { hasMore: boolean; nextCursor: string | null }) {
  return { requestId: ctx.traceId, hasMore: page.hasMore, nextCursor: page.nextCursor };
}
