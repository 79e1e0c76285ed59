import { callerOf, type AppHandler } from '../../http/handler.js';

export const listPublisherItems = (async ({ params }, ctx) => {
  const items = await ctx.services.items.listPublisherItems(callerOf(ctx), params.publisher_id);
  return { status: 200, body: items };
}) satisfies AppHandler<'listPublisherItems'>;
