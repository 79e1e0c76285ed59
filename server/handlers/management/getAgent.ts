import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const getAgent = (async ({ params }, ctx) => {
  const agent = await ctx.services.agents.get(callerOf(ctx).organizationId, params.agent_id);
  return { status: 200, body: { data: agent, meta: meta(ctx) } };
}) satisfies AppHandler<'getAgent'>;
