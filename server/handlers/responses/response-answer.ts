// Shared by every Responses operation (the canonical path, its alias, v1, grounded): the
// request's context for the Responses service, and its answer as JSON or the event stream.
import { callerOf, type RequestContext } from '../../http/handler.js';
import { renderError, toApiError } from '../../http/errors/render.js';
import { completionContext } from '../completions/chat-answer.js';
import type { ResponseContext } from '../../responses/responses-service.js';
import type { AIErrorObject, ResponseBody } from '../../responses/types.js';

export function responseContext(ctx: RequestContext, mode: ResponseContext['mode']): ResponseContext {
  // Assigned onto the completion context, whose lazy logger getter stays as it is.
  return Object.assign(completionContext(ctx, mode), {
    organizationId: callerOf(ctx).organizationId,
    describeError: (error: unknown) => (renderError(toApiError(error), 'AIError', ctx.traceId) as { error: AIErrorObject }).error,
  });
}

export async function responseAnswer(ctx: RequestContext, body: ResponseBody, mode: ResponseContext['mode']) {
  const answer = await ctx.services.responses.create(body, responseContext(ctx, mode));
  return answer.kind === 'json' ? ({ status: 200, body: answer.body, headers: answer.headers } as const) : ({ status: 200, stream: answer.stream, headers: answer.headers } as const);
}
