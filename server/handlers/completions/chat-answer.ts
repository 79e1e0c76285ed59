// Shared by every chat-completion operation (canonical paths, aliases, v1, coding routes):
// run the request through the gateway and return JSON or the event stream.
import type { ChatCompletionBody } from '../../gateway/chat-completions.js';
import type { RequestContext } from '../../http/handler.js';

export async function chatAnswer(ctx: RequestContext, body: ChatCompletionBody, mode: 'guarded' | 'direct') {
  const answer = await ctx.services.inference.completions.create(body, {
    mode,
    operation: ctx.route.operationId,
    traceId: ctx.traceId,
    signal: ctx.signal,
    log: ctx.log,
  });
  return answer.kind === 'json' ? ({ status: 200, body: answer.body } as const) : ({ status: 200, stream: answer.stream } as const);
}
