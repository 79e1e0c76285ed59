import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const listAgents = (async ({ query }, ctx) => {
  const page = await ctx.services.agents.list(callerOf(ctx).organizationId, { limit: query.limit ?? 20, cursor: query.cursor });
  return { status: 200, body: { data: page.items, meta: meta(ctx, page) } };
}) satisfies AppHandler<'listAgents'>;
