import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from '../completions/chat-answer.js';

export const createChatCompletionAlias = (async (request, ctx) => chatAnswer(ctx, request, 'guarded')) satisfies AppHandler<'createChatCompletionAlias'>;
