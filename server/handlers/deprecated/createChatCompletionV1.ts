import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from '../completions/chat-answer.js';

export const createChatCompletionV1 = (async (request, ctx) => chatAnswer(ctx, request, 'direct')) satisfies AppHandler<'createChatCompletionV1'>;
