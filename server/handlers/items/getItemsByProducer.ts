import { callerOf, type AppHandler } from '../../http/handler.js';

export const getItemsByProducer = (async ({ params, body }, ctx) => {
  const items = await ctx.services.items.itemsByProducer(callerOf(ctx), params.publisher_id, body.producer_ids);
  return { status: 200, body: items };
}) satisfies AppHandler<'getItemsByProducer'>;
