import { weekStart } from '../../billing/pricing.js';
import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { reportPeriod } from './report-period.js';
import { usageTotals } from './usage-totals.js';

export const getUsage = (async ({ query }, ctx) => {
  const { since, until } = reportPeriod(query, (end) => weekStart(new Date(end)).getTime());
  const groupBy = query.groupBy ?? 'model';
  const lines = (await ctx.services.billing.accounts.usage(callerOf(ctx).organizationId, new Date(since), new Date(until), groupBy)).map((l) => ({
    group: l.group,
    ...usageTotals(l),
  }));
  const totals = { calls: 0, inputTokens: 0, outputTokens: 0, costMicros: 0, billedMicros: 0 };
  for (const l of lines) for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += l[k];
  return { status: 200, body: { data: { since, until, groupBy, lines, totals }, meta: meta(ctx) } };
}) satisfies AppHandler<'getUsage'>;
