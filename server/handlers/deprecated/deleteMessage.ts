import { callerOf, type AppHandler } from '../../http/handler.js';

export const deleteMessage = (async ({ query }, ctx) => ({
  status: 200,
  body: await ctx.services.chats.deleteMessage(callerOf(ctx), query.message_id),
})) satisfies AppHandler<'deleteMessage'>;
