import { callerOf, type AppHandler } from '../../http/handler.js';

export const getPaywallRelated = (async ({ body }, ctx) => ({
  status: 200,
  body: await ctx.services.paywall.related(callerOf(ctx), body, ctx),
})) satisfies AppHandler<'getPaywallRelated'>;
