import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const getKey = (async ({ params }, ctx) => {
  const key = await ctx.services.identity.keys.get(callerOf(ctx).organizationId, params.key_id);
  return { status: 200, body: { data: key, meta: meta(ctx) } };
}) satisfies AppHandler<'getKey'>;
