import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const listKeys = (async ({ query }, ctx) => {
  const page = await ctx.services.identity.keys.list(callerOf(ctx).organizationId, { limit: query.limit ?? 20, cursor: query.cursor });
  return { status: 200, body: { data: page.items, meta: meta(ctx, page) } };
}) satisfies AppHandler<'listKeys'>;
