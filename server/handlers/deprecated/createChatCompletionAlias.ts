import type { AppHandler } from '../../http/handler.js';
import { chatAnswer } from '../completions/chat-answer.js';

export const createChatCompletionAlias = (async ({ body }, ctx) => chatAnswer(ctx, body, 'guarded')) satisfies AppHandler<'createChatCompletionAlias'>;
