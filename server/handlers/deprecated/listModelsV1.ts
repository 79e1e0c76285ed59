import type { AppHandler } from '../../http/handler.js';

export const listModelsV1 = (async (_request, ctx) => ({ status: 200, body: ctx.services.inference.models })) satisfies AppHandler<'listModelsV1'>;
