import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from '../completions/chat-answer.js';

export const createChatCompletionV1 = (async ({ body }, ctx) => chatAnswer(ctx, body, 'direct')) satisfies AppHandler<'createChatCompletionV1'>;
