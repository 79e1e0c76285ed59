import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { spendLimited } from '../../identity/api-keys.js';

export const updateKey = (async ({ params, body }, ctx) => {
  const caller = callerOf(ctx);
  const key = await ctx.services.identity.keys.update(caller, params.key_id, body);
  // The key's pool counts its week again and takes the new cap and share (on every instance's Redis copy too).
  if (spendLimited(key.limits)) await ctx.services.billing.accounts.syncKeyPool(caller.organizationId, key.id);
  return { status: 200, body: { data: key, meta: meta(ctx) } };
}) satisfies AppHandler<'updateKey'>;
