// The app server that runs an app's composed pipeline without Express's router: Express's
// request and response helpers still work (the request and response are born with the
// app's prototypes), an error reaches the error handler, and an error handler that fails
// itself costs that request its connection, not the server.
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { appServer } from '../../server/http/entry.js';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function serve(pipeline: RequestHandler, onError: ErrorRequestHandler): Promise<string> {
  server = appServer(express(), pipeline, onError)({});
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('appServer', () => {
  it("gives the pipeline Express's request and response", async () => {
    const url = await serve(
      (req, res) =>
        void res.status(201).json({ path: req.path, originalUrl: req.originalUrl, query: req.query, locals: typeof res.locals, paired: req.res === res && res.req === req }),
      () => undefined,
    );
    const res = await fetch(`${url}/a/b?x=1`);
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ path: '/a/b', originalUrl: '/a/b?x=1', query: { x: '1' }, locals: 'object', paired: true });
  });

  it('passes what the pipeline passes on to the error handler', async () => {
    const url = await serve(
      (_req, _res, next) => next(new Error('refused')),
      (error: Error, _req, res, _next) => void res.status(418).json({ message: error.message }),
    );
    const res = await fetch(url);
    expect([res.status, await res.json()]).toEqual([418, { message: 'refused' }]);
  });

  it('drops the connection when the error handler fails, and goes on serving', async () => {
    let fail = true;
    const url = await serve(
      (_req, res, next) => (fail ? next(new Error('first')) : void res.json({ ok: true })),
      () => {
        throw new Error('the error handler broke');
      },
    );
    await expect(fetch(url)).rejects.toThrow();
    fail = false;
    expect(await (await fetch(url)).json()).toEqual({ ok: true });
  });
});
