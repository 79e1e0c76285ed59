// Calls an operation's handler with its typed request and context, and writes what it returns.
import type { Request, RequestHandler, Response } from 'express';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import type { UploadedFile } from '../../generated/server/operations.js';
import type { Services } from '../services.js';
import type { RequestContext } from './handler.js';
import { onResponseEnd } from './response-end.js';
import type { SpooledFile } from './multipart.js';
import { LogsThrough } from '../logging.js';
import { writeSse } from './sse.js';
import { streamErrorEvent } from './errors/stream-event.js';
import { traceIdOf } from './trace.js';

/** The handler as the router sees it: any operation, any declared response. */
export type UntypedHandler = (request: never, ctx: RequestContext) => Promise<unknown>;

interface HandlerResult {
  status: number;
  body?: unknown;
  stream?: AsyncIterable<object>;
  headers?: Record<string, string | number>;
}

export function invoke(route: RouteDefinition, handler: UntypedHandler, services: Services): RequestHandler {
  const call = handler as unknown as (request: unknown, ctx: RequestContext) => Promise<HandlerResult>;
  return async (req, res) => {
    const controller = new AbortController();
    onResponseEnd(res, () => {
      if (!res.writableFinished) controller.abort();
    });
    const ctx = new HandlerContext(req, res, route, controller.signal, services);
    const result = await call(requestOf(route, req), ctx);
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
    if (result.stream) {
      await writeSse(res, result.stream, {
        framing: route.sse ?? 'data',
        signal: controller.signal,
        errorEvent: (error, sequence, last) => streamErrorEvent(route, error, ctx.traceId, sequence, last),
      });
    } else if (result.body === undefined) {
      res.status(result.status).end();
    } else if (typeof result.body === 'string') {
      // A text answer (metrics): the handler sets its Content-Type.
      res.status(result.status).send(result.body);
    } else {
      res.status(result.status).json(result.body);
    }
  };
}

/** The handler's view of its request. */
class HandlerContext extends LogsThrough implements RequestContext {
  readonly traceId: string;
  readonly principal: RequestContext['principal'];
  readonly meter: RequestContext['meter'];
  readonly trace: RequestContext['trace'];

  constructor(
    req: Request,
    res: Response,
    readonly route: RouteDefinition,
    readonly signal: AbortSignal,
    readonly services: Services,
  ) {
    super(req);
    this.traceId = traceIdOf(res);
    this.principal = res.locals.principal ?? null;
    this.meter = res.locals.meter ?? null;
    this.trace = res.locals.trace ?? null;
  }
}

function requestOf(route: RouteDefinition, req: Request) {
  return {
    params: req.params,
    query: req.query,
    body: route.requestMediaType ? req.body : undefined,
    files: uploadedFiles(req),
    headers: req.headers,
  };
}

function uploadedFiles(req: Request): UploadedFile[] {
  const files = req.files as Express.Multer.File[] | undefined;
  return (Array.isArray(files) ? files : []).map((f) => ({
    fieldName: f.fieldname,
    originalName: f.originalname,
    mimeType: f.mimetype,
    size: f.size,
    path: f.path,
    sha256: (f as Express.Multer.File & SpooledFile).sha256,
  }));
}
