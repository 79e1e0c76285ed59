import { callerOf, type AppHandler } from '../../http/handler.js';
import { responseContext } from './response-answer.js';

export const createGroundedResponse = (async ({ body }, ctx) => {
  const { answer, sourcesReturned } = await ctx.services.responses.createGrounded(callerOf(ctx), body, responseContext(ctx, 'guarded'));
  if (answer.kind === 'json') return { status: 200, body: answer.body, headers: answer.headers } as const;
  // A stream reports it in a header, set before the first event.
  return { status: 200, stream: answer.stream, headers: { ...answer.headers, 'X-Sources-Returned': String(sourcesReturned) } } as const;
}) satisfies AppHandler<'createGroundedResponse'>;
