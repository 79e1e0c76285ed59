import { callerOf, type AppHandler } from '../../http/handler.js';

export const sendChatMessage = (async ({ body }, ctx) => {
  const answer = await ctx.services.chats.send(callerOf(ctx), body, {
    mode: 'guarded',
    operation: ctx.route.operationId,
    traceId: ctx.traceId,
    signal: ctx.signal,
    log: ctx.log,
  });
  return { status: 200, body: answer };
}) satisfies AppHandler<'sendChatMessage'>;
