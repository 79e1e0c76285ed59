import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const deleteAgent = (async ({ params }, ctx) => {
  await ctx.services.agents.delete(callerOf(ctx).organizationId, params.agent_id);
  return { status: 200, body: { data: { deleted: true, id: params.agent_id }, meta: meta(ctx) } };
}) satisfies AppHandler<'deleteAgent'>;
