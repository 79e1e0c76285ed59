import { callerOf, type AppHandler } from '../../http/handler.js';

export const patchItems = (async ({ query, body }, ctx) => {
  const outcome = await ctx.services.items.patchItems(callerOf(ctx), query.publisher_id, body);
  return { status: 200, body: outcome };
}) satisfies AppHandler<'patchItems'>;
