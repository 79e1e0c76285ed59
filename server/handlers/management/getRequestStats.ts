import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { reportPeriod } from './report-period.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export const getRequestStats = (async ({ query }, ctx) => {
  const { since, until } = reportPeriod(query, (end) => end - DAY_MS);
  const bucket = query.bucket ?? 'hour';
  const stats = await ctx.services.requestLog.stats(callerOf(ctx).organizationId, new Date(since), new Date(until), bucket);
  return {
    status: 200,
    body: {
      data: {
        since,
        until,
        bucket,
        buckets: stats.buckets.map((b) => ({ ...b, costMicros: Number(b.costMicros) })),
        models: stats.models.map((m) => ({ ...m, costMicros: Number(m.costMicros) })),
      },
      meta: meta(ctx),
    },
  };
}) satisfies AppHandler<'getRequestStats'>;
