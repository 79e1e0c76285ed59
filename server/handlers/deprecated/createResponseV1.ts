import type { AppHandler } from '../../http/handler.js';
import { responseAnswer } from '../responses/response-answer.js';

export const createResponseV1 = (async ({ body }, ctx) => responseAnswer(ctx, body, 'direct')) satisfies AppHandler<'createResponseV1'>;
