import { callerOf, type AppHandler } from '../../http/handler.js';

export const patchItem = (async ({ body }, ctx) => {
  const { itemId, changed } = await ctx.services.items.patchItem(callerOf(ctx), body);
  return { status: 200, body: { success: true, message: changed ? `Item ${itemId} updated.` : `Item ${itemId} unchanged: nothing to update.` } };
}) satisfies AppHandler<'patchItem'>;
