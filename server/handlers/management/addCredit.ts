import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const addCredit = (async ({ body }, ctx) => {
  const entry = await ctx.services.billing.accounts.addCredit(callerOf(ctx).organizationId, BigInt(body.amountMicros), body.reason ?? 'credit added');
  const data = {
    id: entry.id,
    amountMicros: Number(entry.amountMicros),
    reason: entry.reason,
    createdAt: entry.createdAt.getTime(),
    balanceMicros: Number(entry.balanceMicros),
  };
  return { status: 201, body: { data, meta: meta(ctx) } };
}) satisfies AppHandler<'addCredit'>;
