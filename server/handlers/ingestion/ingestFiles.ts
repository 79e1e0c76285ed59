import { callerOf, type AppHandler } from '../../http/handler.js';

export const ingestFiles = (async ({ query, body, files }, ctx) => {
  const result = await ctx.services.ingestion.upload(callerOf(ctx), {
    publisherId: body.publisher_id,
    producerId: query.producer_id,
    update: query.update,
    files: files.filter((file) => file.fieldName === 'files'),
  });
  return { status: 200, body: result };
}) satisfies AppHandler<'ingestFiles'>;
