import type { AppHandler } from '../../http/handler.js';
import { groundedAnswer } from '../completions/createGroundedChatCompletion.js';

export const createGroundedChatCompletionAlias = (async ({ body }, ctx) => groundedAnswer(ctx, body)) satisfies AppHandler<'createGroundedChatCompletionAlias'>;
