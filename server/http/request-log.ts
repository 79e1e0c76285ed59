// One log line per request, written when the response is done, and a request logger
// (`req.log`) that is only made when a handler or the error handler actually logs: most
// requests never need one, and a pino child per request costs more than the line itself.
import type { Express, Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { traceIdOf } from './trace.js';

declare global {
  namespace Express {
    interface Request {
      /** This request's logger, bound to its trace id, method and path. */
      log: Logger;
    }
  }
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
    // Nothing would be written (LOG_LEVEL above warn, or silent): no timing, no listener.
    if (!logger.isLevelEnabled('warn')) return next();
    const started = performance.now();
    res.once('close', () => {
      const line = {
        traceId: traceIdOf(res),
        method: req.method,
        path: pathOf(req),
        status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      };
      // Error answers are logged with their cause by the error handler; this line is the access record.
      if (!res.writableFinished) logger.warn(line, 'request aborted');
      else if (res.statusCode >= 500) logger.warn(line, 'request completed');
      else logger.info(line, 'request completed');
    });
    next();
  };
}
