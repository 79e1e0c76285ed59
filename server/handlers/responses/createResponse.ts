import type { AppHandler } from '../../http/handler.js';
import { responseAnswer } from './response-answer.js';

export const createResponse = (async ({ body }, ctx) => responseAnswer(ctx, body, 'guarded')) satisfies AppHandler<'createResponse'>;
