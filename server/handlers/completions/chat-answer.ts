// Shared by every chat-completion operation (canonical paths, aliases, v1, coding routes,
// grounded answers, the Chat API): the request's context for the gateway, and its answer
// as JSON or the event stream.
import type { IncomingHeaders } from '../../../generated/server/operations.js';
import type { CacheMode, CacheRequest } from '../../gateway/cache/response-cache.js';
import type { ChatCompletionBody, CompletionContext } from '../../gateway/chat-completions.js';
import { callerOf, type RequestContext } from '../../http/handler.js';
import { LogsThrough } from '../../logging.js';

/** `cache`: for an operation that offers the response cache. */
export function completionContext(ctx: RequestContext, mode: CompletionContext['mode'], cache?: CacheRequest): CompletionContext {
  return new HandlerCompletionContext(ctx, mode, cache);
}

class HandlerCompletionContext extends LogsThrough implements CompletionContext {
  readonly operation: string;
  readonly traceId: string;
  readonly signal: AbortSignal;
  readonly meter: CompletionContext['meter'];
  readonly models: CompletionContext['models'];
  readonly trace: CompletionContext['trace'];

  constructor(
    ctx: RequestContext,
    readonly mode: CompletionContext['mode'],
    readonly cache: CacheRequest | undefined,
  ) {
    super(ctx);
    this.operation = ctx.route.operationId;
    this.traceId = ctx.traceId;
    this.signal = ctx.signal;
    this.meter = ctx.meter;
    this.models = ctx.principal?.models ?? null;
    this.trace = ctx.trace;
  }
}

/** A chat completion; the response cache applies (its `X-Response-Cache` header read, `X-Cache` answered). */
export async function chatAnswer(ctx: RequestContext, { body, headers }: { body: ChatCompletionBody; headers: IncomingHeaders }, mode: CompletionContext['mode']) {
  const caller = callerOf(ctx);
  const cache = { organizationId: caller.organizationId, credentialId: caller.credentialId, mode: headers['x-response-cache'] as CacheMode | undefined };
  const answer = await ctx.services.inference.completions.create(body, completionContext(ctx, mode, cache));
  const answered = answer.cache ? { ...answer.headers, 'X-Cache': answer.cache } : answer.headers;
  return answer.kind === 'json' ? ({ status: 200, body: answer.body, headers: answered } as const) : ({ status: 200, stream: answer.stream, headers: answered } as const);
}
