import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from './chat-answer.js';

export const createCodingChatCompletion = (async ({ body }, ctx) => chatAnswer(ctx, body, 'guarded')) satisfies AppHandler<'createCodingChatCompletion'>;
