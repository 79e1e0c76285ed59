import { ApiError } from '../../errors.js';
import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { PUBLISHERS_HINT } from '../../identity/organizations.js';

export const listIngestionFailures = (async ({ query }, ctx) => {
  const caller = callerOf(ctx);
  const publisherId = query.publisher_id;
  // Another organization's publisher is answered as one that does not exist.
  if (publisherId && !(await ctx.services.identity.organizations.ownsPublisher(caller.organizationId, publisherId))) {
    throw new ApiError('NOT_FOUND', `Publisher ${publisherId} not found (${PUBLISHERS_HINT})`);
  }
  const page = await ctx.services.ingestionFailures.list(caller.organizationId, publisherId, { limit: query.limit ?? 20, cursor: query.cursor });
  return {
    status: 200,
    body: { data: page.items.map((f) => ({ ...f, failedAt: f.failedAt.getTime() })), meta: meta(ctx, page) },
  };
}) satisfies AppHandler<'listIngestionFailures'>;
