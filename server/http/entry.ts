// An app's HTTP server: Express's request and response (their helpers, the app's settings,
// res.locals) around the one composed pipeline, without Express's own router.
// With every step composed (route-table.ts) the router had nothing left to route, yet it
// walked its layer stack per request with closures that live as long as the request: at 64
// concurrent requests ~6 KB a request outlived V8's young generation there (bench:gateway
// --alloc-old), making every scavenge copy it and the major collections come sooner.
import { createServer, IncomingMessage, ServerResponse, type Server, type ServerOptions } from 'node:http';
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';

/** Makes the app's server with Node's `options` (timeouts, limits). */
export type ServerFactory = (options: ServerOptions) => Server;

const nowhere = () => undefined;

/** `pipeline` ends every request itself (its last step answers 404); what it passes on is an error for `onError`. */
export function appServer(app: Express, pipeline: RequestHandler, onError: ErrorRequestHandler): ServerFactory {
  // Requests and responses are born with the app's prototypes, where Express's app.handle
  // swaps each one's prototype per request (a map transition per object).
  class AppRequest extends IncomingMessage {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  class AppResponse extends ServerResponse {}
  Object.setPrototypeOf(AppResponse.prototype, app.response);

  const listener = (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const req = incoming as Request;
    const res = outgoing as Response;
    req.res = res;
    // Express makes it with a null prototype: a dictionary-mode object, ~200 bytes and ~0.4 µs
    // more than a literal. Only the pipeline's own keys are read from it.
    res.locals = {} as Response['locals'];
    // As the router sets them for a top-level app (express-openapi-validator reads originalUrl).
    req.originalUrl = req.url;
    req.baseUrl = '';
    pipeline(req, res, (error?: unknown) => {
      try {
        onError(error, req, res, nowhere);
      } catch (failure) {
        // The error handler itself failed: nothing sensible can be written any more.
        res.destroy(failure as Error);
      }
    });
  };
  return (options) => createServer({ ...options, IncomingMessage: AppRequest, ServerResponse: AppResponse }, listener);
}
