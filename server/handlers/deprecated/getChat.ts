import { callerOf, type AppHandler } from '../../http/handler.js';

export const getChat = (async ({ query }, ctx) => ({
  status: 200,
  body: await ctx.services.chats.history(callerOf(ctx), query.chat_id),
})) satisfies AppHandler<'getChat'>;
