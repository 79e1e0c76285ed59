import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from './chat-answer.js';

export const createGuardedChatCompletion = (async ({ body }, ctx) => chatAnswer(ctx, body, 'guarded')) satisfies AppHandler<'createGuardedChatCompletion'>;
