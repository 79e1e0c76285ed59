import { callerOf, type AppHandler } from '../../http/handler.js';

export const getRecommendationsVerbose = (async ({ body }, ctx) => {
  return { status: 200, body: await ctx.services.search.recommend(callerOf(ctx), body, { verbose: true }, ctx) };
}) satisfies AppHandler<'getRecommendationsVerbose'>;
