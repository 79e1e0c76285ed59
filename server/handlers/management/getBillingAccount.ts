import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const getBillingAccount = (async (_request, ctx) => {
  const a = await ctx.services.billing.accounts.overview(callerOf(ctx).organizationId);
  const data = {
    mode: a.mode,
    balanceMicros: Number(a.balanceMicros),
    reservedMicros: Number(a.reservedMicros),
    availableMicros: Number(a.balanceMicros - a.reservedMicros),
    weeklyCapMicros: a.weeklyCapMicros === null ? null : Number(a.weeklyCapMicros),
    weekSpentMicros: Number(a.weekSpentMicros),
    weekStartsAt: a.weekStart.getTime(),
    weekResetsAt: a.weekResetsAt.getTime(),
    codingPlans: a.codingPlans.map((p) => ({
      product: p.product,
      period: p.period,
      allowanceMicros: Number(p.allowanceMicros),
      usedMicros: Number(p.usedMicros),
      reservedMicros: Number(p.reservedMicros),
      periodStartsAt: p.periodStart.getTime(),
      topupAvailable: p.topupAvailable,
    })),
  };
  return { status: 200, body: { data, meta: meta(ctx) } };
}) satisfies AppHandler<'getBillingAccount'>;
