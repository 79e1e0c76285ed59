import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const createAgent = (async ({ body }, ctx) => {
  const agent = await ctx.services.agents.create(callerOf(ctx).organizationId, body);
  return { status: 201, body: { data: agent, meta: meta(ctx) } };
}) satisfies AppHandler<'createAgent'>;
