import { callerOf, type AppHandler } from '../../http/handler.js';

export const searchCollection = (async ({ body }, ctx) => {
  return { status: 200, body: await ctx.services.search.search(callerOf(ctx), body, ctx) };
}) satisfies AppHandler<'searchCollection'>;
