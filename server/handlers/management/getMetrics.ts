import type { AppHandler } from '../../http/handler.js';

export const getMetrics = (async (_request, ctx) => ({
  status: 200,
  body: await ctx.services.metrics.registry.metrics(),
  headers: { 'Content-Type': ctx.services.metrics.registry.contentType },
})) satisfies AppHandler<'getMetrics'>;
