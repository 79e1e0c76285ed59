import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { spendLimited } from '../../identity/api-keys.js';

export const createKey = (async ({ body }, ctx) => {
  const caller = callerOf(ctx);
  const { key, plaintext } = await ctx.services.identity.keys.create(caller, body);
  // Before its plaintext is shown: no request can use the key before its pool is there.
  if (spendLimited(key.limits)) await ctx.services.billing.accounts.syncKeyPool(caller.organizationId, key.id);
  const { revokedAt: _revokedAt, lastUsedAt: _lastUsedAt, ...created } = key;
  return { status: 201, body: { data: { ...created, key: plaintext }, meta: meta(ctx) } };
}) satisfies AppHandler<'createKey'>;
