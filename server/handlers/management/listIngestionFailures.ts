import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const listIngestionFailures = (async ({ query }, ctx) => {
  const caller = callerOf(ctx);
  // A foreign or unknown publisher is refused in the words every publisher error uses.
  if (query.publisher_id) await ctx.services.identity.organizations.publisherForCaller(caller, query.publisher_id);
  const page = await ctx.services.ingestionFailures.list(caller.organizationId, query.publisher_id, { limit: query.limit ?? 20, cursor: query.cursor });
  return {
    status: 200,
    body: { data: page.items.map((f) => ({ ...f, failedAt: f.failedAt.getTime() })), meta: meta(ctx, page) },
  };
}) satisfies AppHandler<'listIngestionFailures'>;
