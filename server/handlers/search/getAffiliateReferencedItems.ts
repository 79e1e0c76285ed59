import { callerOf, type AppHandler } from '../../http/handler.js';

export const getAffiliateReferencedItems = (async ({ body }, ctx) => {
  return { status: 200, body: await ctx.services.search.affiliates(callerOf(ctx), body, ctx) };
}) satisfies AppHandler<'getAffiliateReferencedItems'>;
