import { weekStart } from '../../billing/pricing.js';
import { ApiError } from '../../errors.js';
import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const getUsage = (async ({ query }, ctx) => {
  const until = query.until ?? Date.now();
  const since = query.since ?? weekStart(new Date(until)).getTime();
  if (since >= until) {
    throw new ApiError('VALIDATION_ERROR', '`since` must be before `until`', {
      gatewayCode: 'validation_error',
      issues: [{ loc: ['query', 'since'], msg: 'Must be before until', type: 'value_error', input: since }],
    });
  }
  const groupBy = query.groupBy ?? 'model';
  const lines = (await ctx.services.billing.usage(callerOf(ctx).organizationId, new Date(since), new Date(until), groupBy)).map((l) => ({
    group: l.group,
    calls: l.calls,
    inputTokens: l.inputTokens,
    outputTokens: l.outputTokens,
    costMicros: Number(l.costMicros),
    billedMicros: Number(l.billedMicros),
  }));
  const totals = { calls: 0, inputTokens: 0, outputTokens: 0, costMicros: 0, billedMicros: 0 };
  for (const l of lines) for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += l[k];
  return { status: 200, body: { data: { since, until, groupBy, lines, totals }, meta: meta(ctx) } };
}) satisfies AppHandler<'getUsage'>;
