import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';
import { publisherView } from './publisher-view.js';

export const createPublisher = (async ({ body }, ctx) => {
  const publisher = await ctx.services.identity.organizations.addPublisher(callerOf(ctx).organizationId, body.name);
  return { status: 201, body: { data: publisherView(publisher), meta: meta(ctx) } };
}) satisfies AppHandler<'createPublisher'>;
