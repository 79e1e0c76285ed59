import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const listRequests = (async ({ query }, ctx) => {
  const page = await ctx.services.requestLog.list(
    callerOf(ctx).organizationId,
    {
      since: query.since === undefined ? undefined : new Date(query.since),
      until: query.until === undefined ? undefined : new Date(query.until),
      model: query.model,
      provider: query.provider,
      status: query.status,
      traceId: query.traceId,
    },
    { limit: query.limit ?? 20, cursor: query.cursor },
  );
  const data = page.items.map(({ id: _id, apiKeyId, at, costMicros, ...r }) => ({ ...r, keyId: apiKeyId, at: at.getTime(), costMicros: Number(costMicros) }));
  return { status: 200, body: { data, meta: meta(ctx, page) } };
}) satisfies AppHandler<'listRequests'>;
