import { callerOf, type AppHandler } from '../../http/handler.js';

export const realTimeUpload = (async ({ body }, ctx) => ({
  status: 200,
  body: await ctx.services.ingestion.ingestText(callerOf(ctx), body),
})) satisfies AppHandler<'realTimeUpload'>;
