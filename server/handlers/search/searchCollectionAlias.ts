import { callerOf, type AppHandler } from '../../http/handler.js';

export const searchCollectionAlias = (async ({ body }, ctx) => {
  return { status: 200, body: await ctx.services.search.search(callerOf(ctx), body, ctx) };
}) satisfies AppHandler<'searchCollectionAlias'>;
