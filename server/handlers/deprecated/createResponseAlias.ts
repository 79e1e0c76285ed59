import type { AppHandler } from '../../http/handler.js';
import { responseAnswer } from '../responses/response-answer.js';

export const createResponseAlias = (async ({ body }, ctx) => responseAnswer(ctx, body, 'guarded')) satisfies AppHandler<'createResponseAlias'>;
