import { createEmbeddings as embed } from '../../gateway/embeddings.js';
import type { AppHandler } from '../../http/handler.js';

export const createEmbeddingsAlias = (async ({ body }, ctx) => ({
  status: 200,
  body: await embed(ctx.services.inference.gateway, body, ctx),
})) satisfies AppHandler<'createEmbeddingsAlias'>;
