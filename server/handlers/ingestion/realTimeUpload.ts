import { cleanFileName } from '../../http/file-name.js';
import { callerOf, type AppHandler } from '../../http/handler.js';

export const realTimeUpload = (async ({ body }, ctx) => {
  // The file name to record is cleaned as an uploaded file's is (http/file-name.ts); one left empty
  // by that is derived from the title, as a missing one is.
  const document = body.filename === undefined ? body : { ...body, filename: cleanFileName(body.filename) || undefined };
  return { status: 200, body: await ctx.services.ingestion.ingestText(callerOf(ctx), document) };
}) satisfies AppHandler<'realTimeUpload'>;
