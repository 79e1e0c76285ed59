import { weekStart } from '../../billing/pricing.js';
import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { reportPeriod } from './report-period.js';
import { usageTotals } from './usage-totals.js';

export const getUsageSeries = (async ({ query }, ctx) => {
  const { since, until } = reportPeriod(query, (end) => weekStart(new Date(end)).getTime());
  const groupBy = query.groupBy ?? 'model';
  const bucket = query.bucket ?? 'hour';
  const lines = await ctx.services.billing.accounts.usage(callerOf(ctx).organizationId, new Date(since), new Date(until), groupBy, bucket);
  const points = lines.map((l) => ({ start: l.start ?? since, group: l.group, ...usageTotals(l) }));
  return { status: 200, body: { data: { since, until, bucket, groupBy, points }, meta: meta(ctx) } };
}) satisfies AppHandler<'getUsageSeries'>;
