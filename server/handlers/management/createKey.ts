import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const createKey = (async ({ body }, ctx) => {
  const { key, plaintext } = await ctx.services.identity.keys.create(callerOf(ctx), body);
  const { revokedAt: _revokedAt, lastUsedAt: _lastUsedAt, ...created } = key;
  return { status: 201, body: { data: { ...created, key: plaintext }, meta: meta(ctx) } };
}) satisfies AppHandler<'createKey'>;
