import { callerOf, type AppHandler } from '../../http/handler.js';

export const getRecommendations = (async ({ body }, ctx) => {
  return { status: 200, body: await ctx.services.search.recommend(callerOf(ctx), body, { verbose: false }, ctx) };
}) satisfies AppHandler<'getRecommendations'>;
