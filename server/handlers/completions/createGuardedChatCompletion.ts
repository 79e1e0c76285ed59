import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from './chat-answer.js';

export const createGuardedChatCompletion = (async (request, ctx) => chatAnswer(ctx, request, 'guarded')) satisfies AppHandler<'createGuardedChatCompletion'>;
