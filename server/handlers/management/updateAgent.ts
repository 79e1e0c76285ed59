import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const updateAgent = (async ({ params, body }, ctx) => {
  const agent = await ctx.services.agents.update(callerOf(ctx).organizationId, params.agent_id, body);
  return { status: 200, body: { data: agent, meta: meta(ctx) } };
}) satisfies AppHandler<'updateAgent'>;
