import { callerOf, type AppHandler } from '../../http/handler.js';
import { completionContext } from '../completions/chat-answer.js';

export const sendChatMessage = (async ({ body }, ctx) => {
  const answer = await ctx.services.chats.send(callerOf(ctx), body, completionContext(ctx, 'guarded'));
  return { status: 200, body: answer };
}) satisfies AppHandler<'sendChatMessage'>;
