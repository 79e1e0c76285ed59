// One log line per request, written when the response is done, and a request logger
// (`req.log`) that is only made when a handler or the error handler actually logs: most
// requests never need one, and a pino child per request costs more than the line itself.
// An error answer does not log a line of its own: it notes its outcome, which this line carries.
import type { Express, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { ApiError } from '../errors.js';
import { logSafe } from '../logging.js';
import { onResponseEnd } from './response-end.js';
import { traceIdOf } from './trace.js';

declare global {
  namespace Express {
    interface Request {
      /** This request's logger, bound to its trace id, method and path. */
      log: Logger;
    }
  }
}

/** An error message is ours but may quote caller input; this much of it is enough to tell what happened. */
const LOGGED_DETAIL_MAX = 256;

/** What the request line says about an error answer (before or after a stream's 200). */
interface Outcome {
  error: string;
  detail: string;
  /** Set for a server failure only: the line is then an error with its cause. */
  err?: unknown;
}

/** What a cause may put in the log: a Prisma error only by kind, never its query arguments. */
function loggable(cause: unknown): unknown {
  const name = (cause as { name?: string })?.name ?? '';
  return name.startsWith('PrismaClient') ? { type: name, code: (cause as { code?: string }).code } : cause;
}

/**
 * Notes an error answer for the request line. An expected answer (a client error, a stub's
 * 501) adds its error name and a bounded detail; a server failure also its cause, and the
 * line becomes an error.
 */
export function noteError(res: Response, error: ApiError): void {
  const failure = error.status >= 500 && error.errorName !== 'NOT_IMPLEMENTED';
  const outcome: Outcome = { error: error.errorName, detail: logSafe(error.message, LOGGED_DETAIL_MAX) };
  if (failure) outcome.err = loggable(error.options.cause ?? error);
  res.locals.outcome = outcome;
}

/** The path only: a query string may carry what a client should not have put there. */
function pathOf(req: Request): string {
  const url = req.originalUrl;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** Installs `req.log` on `app`'s requests and returns the middleware writing the request line. */
export function requestLogging(app: Express, logger: Logger): RequestHandler {
  const own = (req: Request, log: Logger) => Object.defineProperty(req, 'log', { value: log, writable: true, configurable: true, enumerable: true });
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: Request) {
      const log = logger.child({ traceId: traceIdOf(this.res!), method: this.method, path: pathOf(this) });
      own(this, log);
      return log;
    },
    set(this: Request, log: Logger) {
      own(this, log);
    },
  });

  return (req, res, next) => {
    // Nothing would be written (LOG_LEVEL above error, or silent): no timing, no listener.
    if (!logger.isLevelEnabled('error')) return next();
    const started = performance.now();
    onResponseEnd(res, () => {
      const outcome = res.locals.outcome as Outcome | undefined;
      const line = {
        traceId: traceIdOf(res),
        method: req.method,
        path: pathOf(req),
        status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...outcome,
      };
      if (outcome?.err !== undefined) logger.error(line, 'request failed');
      else if (!res.writableFinished) logger.warn(line, 'request aborted');
      else if (res.statusCode >= 500 && outcome?.error !== 'NOT_IMPLEMENTED') logger.warn(line, 'request completed');
      else logger.info(line, 'request completed');
    });
    next();
  };
}
