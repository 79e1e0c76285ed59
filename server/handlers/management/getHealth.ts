import type { AppHandler } from '../../http/handler.js';
import { listMeta } from '../../http/envelope.js';

export const getHealth = (async (_request, ctx) => {
  const report = await ctx.services.health.report();
  return { status: 200, body: { data: report, meta: listMeta(ctx, { hasMore: false, nextCursor: null }) } };
}) satisfies AppHandler<'getHealth'>;
