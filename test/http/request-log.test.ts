// One log line per request, at its end, without the query string; `req.log` is made only
// when something logs, and carries the request's trace id.
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express, { type Request } from 'express';
import { describe, expect, it } from 'vitest';
import { requestLogging } from '../../server/http/request-log.js';
import { assignTraceId } from '../../server/http/trace.js';
import { createLogger } from '../../server/logging.js';

async function serve(path: string): Promise<{ lines: Record<string, any>[]; requests: Request[]; traceId: string | null }> {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const requests: Request[] = [];
  const app = express();
  app.use(assignTraceId);
  app.use(requestLogging(app, createLogger('info', sink)));
  app.get('/quiet', (req, res) => {
    requests.push(req);
    res.json({ ok: true });
  });
  app.get('/chatty', (req, res) => {
    requests.push(req);
    req.log.info({ client: { secret: 'sk_secret' }, detail: 1 }, 'handler says');
    res.status(503).json({ ok: false });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
    await res.text();
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { lines, requests, traceId: res.headers.get('x-trace-id') };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('request log', () => {
  it('writes one line per request, path without its query string, and makes no request logger', async () => {
    const { lines, requests, traceId } = await serve('/quiet?token=abc');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'request completed', method: 'GET', path: '/quiet', status: 200, traceId });
    expect(lines[0].durationMs).toBeTypeOf('number');
    expect(JSON.stringify(lines)).not.toContain('token');
    expect(Object.getOwnPropertyDescriptor(requests[0], 'log')).toBeUndefined();
  });

  it('gives a handler that logs a logger bound to the request, with the redaction rules', async () => {
    const { lines, traceId } = await serve('/chatty?token=abc');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ msg: 'handler says', traceId, method: 'GET', path: '/chatty', detail: 1 });
    expect(lines[1]).toMatchObject({ level: 40, msg: 'request completed', status: 503 });
    expect(JSON.stringify(lines)).not.toContain('sk_secret');
    expect(JSON.stringify(lines)).not.toContain('token');
  });
});
