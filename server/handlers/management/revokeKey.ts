import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const revokeKey = (async ({ params }, ctx) => {
  const key = await ctx.services.identity.keys.revoke(callerOf(ctx), params.key_id);
  return { status: 200, body: { data: key, meta: meta(ctx) } };
}) satisfies AppHandler<'revokeKey'>;
