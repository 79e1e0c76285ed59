// What the error handler writes to the log: an expected answer (4xx, a stub's 501) is one
// info line without a stack, a failure is an error with its cause, and caller input quoted
// in a message is bounded.
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../server/errors.js';
import { errorHandler } from '../../server/http/error-handler.js';
import { assignTraceId } from '../../server/http/trace.js';
import { createLogger, logSafe } from '../../server/logging.js';

const INFO = 30;
const ERROR = 50;

/** The log lines the error handler writes for one request whose handler throws `error`. */
async function logOf(error: unknown): Promise<{ status: number; body: any; lines: Record<string, any>[] }> {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger('debug', sink);
  const app = express();
  app.use(assignTraceId);
  app.use((req, _res, next) => {
    req.log = logger;
    next();
  });
  app.get('/', () => {
    throw error;
  });
  app.use(errorHandler('api'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return { status: res.status, body: await res.json(), lines };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('error handler logging', () => {
  it('logs a stub\'s 501 once, at info, without a stack', async () => {
    const { status, body, lines } = await logOf(new ApiError('NOT_IMPLEMENTED', 'searchCollection is not implemented yet'));
    expect(status).toBe(501);
    expect(body.trace_id).toMatch(/^trc_/);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: INFO, status: 501, error: 'NOT_IMPLEMENTED' });
    expect(JSON.stringify(lines[0])).not.toContain('stack');
  });

  it('logs a client error once, at info, with a bounded and clean message', async () => {
    const input = `evil\n{"level":60}${'x'.repeat(1_000_000)}`;
    const { status, lines } = await logOf(new ApiError('NOT_FOUND', `No agent ${input}`));
    expect(status).toBe(404);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: INFO, status: 404 });
    expect(lines[0].msg.length).toBeLessThan(300);
    expect(lines[0].msg).not.toContain('\n');
    expect(JSON.stringify(lines[0])).not.toContain('stack');
  });

  it('logs a server failure at error, with its cause', async () => {
    const { status, lines } = await logOf(new Error('database on fire'));
    expect(status).toBe(500);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: ERROR, err: { message: 'database on fire', stack: expect.stringContaining('database on fire') } });
  });
});

describe('logSafe', () => {
  it('keeps a short value, strips control characters and cuts a long one', () => {
    expect(logSafe('oc_client')).toBe('oc_client');
    expect(logSafe('a\u0000b\nc\u2028d')).toBe('abcd');
    expect(logSafe('x'.repeat(10_000_000))).toBe(`${'x'.repeat(64)}…`);
  });
});
