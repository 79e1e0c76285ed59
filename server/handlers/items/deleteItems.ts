import { callerOf, type AppHandler } from '../../http/handler.js';

export const deleteItems = (async ({ body }, ctx) => {
  const outcome = await ctx.services.items.deleteItems(callerOf(ctx), body.item_ids);
  return { status: 200, body: outcome };
}) satisfies AppHandler<'deleteItems'>;
