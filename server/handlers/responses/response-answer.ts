// Shared by every Responses operation (the canonical path, its alias, v1, grounded): the
// request's context for the Responses service, and its answer as JSON or the event stream.
import { callerOf, type RequestContext } from '../../http/handler.js';
import { renderError, toApiError } from '../../http/errors.js';
import type { ResponseContext } from '../../responses/responses-service.js';
import type { AIErrorObject, ResponseBody } from '../../responses/types.js';

export function responseContext(ctx: RequestContext, mode: ResponseContext['mode']): ResponseContext {
  return {
    mode,
    operation: ctx.route.operationId,
    organizationId: callerOf(ctx).organizationId,
    traceId: ctx.traceId,
    signal: ctx.signal,
    meter: ctx.meter,
    get log() {
      return ctx.log;
    },
    describeError: (error) => (renderError(toApiError(error), 'AIError', ctx.traceId) as { error: AIErrorObject }).error,
  };
}

export async function responseAnswer(ctx: RequestContext, body: ResponseBody, mode: ResponseContext['mode']) {
  const answer = await ctx.services.responses.create(body, responseContext(ctx, mode));
  return answer.kind === 'json' ? ({ status: 200, body: answer.body } as const) : ({ status: 200, stream: answer.stream } as const);
}
