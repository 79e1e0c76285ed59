import type { AppHandler } from '../../http/handler.js';

export const listModels = (async (_request, ctx) => ({ status: 200, body: ctx.services.inference.models })) satisfies AppHandler<'listModels'>;
