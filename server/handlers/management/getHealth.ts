import type { AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const getHealth = (async (_request, ctx) => {
  const report = await ctx.services.health.report();
  return { status: 200, body: { data: report, meta: meta(ctx) } };
}) satisfies AppHandler<'getHealth'>;
