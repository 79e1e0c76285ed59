import { callerOf, type AppHandler } from '../../http/handler.js';

export const getFile = (async ({ params }, ctx) => {
  const file = await ctx.services.items.getFile(callerOf(ctx), params.item_id);
  return { status: 200, body: file };
}) satisfies AppHandler<'getFile'>;
