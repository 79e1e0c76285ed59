import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { publisherView } from './publisher-view.js';

export const listPublishers = (async ({ query }, ctx) => {
  const page = await ctx.services.identity.organizations.listPublishers(callerOf(ctx).organizationId, { limit: query.limit ?? 20, cursor: query.cursor });
  return { status: 200, body: { data: page.items.map(publisherView), meta: meta(ctx, page) } };
}) satisfies AppHandler<'listPublishers'>;
