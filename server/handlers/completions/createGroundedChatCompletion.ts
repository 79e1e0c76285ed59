import { callerOf, type AppHandler, type RequestContext } from '../../http/handler.js';
import { completionContext } from './chat-answer.js';
import type { GroundedBody } from '../../data/grounding/grounded-completions.js';

/** Shared with the deprecated alias (`/ai/v2/chat/completions/grounded`). */
export async function groundedAnswer(ctx: RequestContext, body: GroundedBody) {
  const answer = await ctx.services.grounding.create(callerOf(ctx), body, completionContext(ctx, 'guarded'));
  return answer.kind === 'json' ? ({ status: 200, body: answer.body, headers: answer.headers } as const) : ({ status: 200, stream: answer.stream, headers: answer.headers } as const);
}

export const createGroundedChatCompletion = (async ({ body }, ctx) => groundedAnswer(ctx, body)) satisfies AppHandler<'createGroundedChatCompletion'>;
