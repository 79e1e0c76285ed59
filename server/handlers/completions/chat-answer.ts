// Shared by every chat-completion operation (canonical paths, aliases, v1, coding routes,
// grounded answers, the Chat API): the request's context for the gateway, and its answer
// as JSON or the event stream.
import type { ChatCompletionBody, CompletionContext } from '../../gateway/chat-completions.js';
import type { RequestContext } from '../../http/handler.js';
import { LogsThrough } from '../../logging.js';

export function completionContext(ctx: RequestContext, mode: CompletionContext['mode']): CompletionContext {
  return new HandlerCompletionContext(ctx, mode);
}

class HandlerCompletionContext extends LogsThrough implements CompletionContext {
  readonly operation: string;
  readonly traceId: string;
  readonly signal: AbortSignal;
  readonly meter: CompletionContext['meter'];

  constructor(
    ctx: RequestContext,
    readonly mode: CompletionContext['mode'],
  ) {
    super(ctx);
    this.operation = ctx.route.operationId;
    this.traceId = ctx.traceId;
    this.signal = ctx.signal;
    this.meter = ctx.meter;
  }
}

export async function chatAnswer(ctx: RequestContext, body: ChatCompletionBody, mode: CompletionContext['mode']) {
  const answer = await ctx.services.inference.completions.create(body, completionContext(ctx, mode));
  return answer.kind === 'json' ? ({ status: 200, body: answer.body, headers: answer.headers } as const) : ({ status: 200, stream: answer.stream, headers: answer.headers } as const);
}
