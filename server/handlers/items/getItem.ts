import { callerOf, type AppHandler } from '../../http/handler.js';

export const getItem = (async ({ params }, ctx) => {
  const item = await ctx.services.items.getItem(callerOf(ctx), params.item_id);
  return { status: 200, body: item };
}) satisfies AppHandler<'getItem'>;
