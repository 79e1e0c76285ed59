import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const retryIngestion = (async ({ params }, ctx) => ({
  status: 202,
  body: { data: await ctx.services.ingestionFailures.retry(callerOf(ctx).organizationId, params.item_id), meta: meta(ctx) },
})) satisfies AppHandler<'retryIngestion'>;
