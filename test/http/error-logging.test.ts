// One log line per request through the real platform: an error answer is the request line
// with its error name and a bounded detail (info for a client error or a stub's 501, error
// with the cause for a server failure), never a second line from the error handler.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../server/errors.js';
import { logSafe } from '../../server/logging.js';
import { logLinesOf, startTestPlatform, type TestPlatform } from '../support/platform.js';

const INFO = 30;
const ERROR = 50;

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({}, {
    admission: [
      // Lets a test make listAgents fail the way a stub or a broken dependency would.
      () => (req, _res, next) => {
        const fail = req.headers['x-test-fail'];
        if (fail === 'stub') throw new ApiError('NOT_IMPLEMENTED', 'listAgents is not implemented yet');
        if (fail === 'crash') throw new Error('database on fire');
        next();
      },
    ],
  });
});
afterAll(() => platform?.close());

const linesOf = async (res: Response) => (await logLinesOf(platform, res)).map((line) => JSON.parse(line));

describe('error logging', () => {
  it('logs a client error once, at info, with its error name and no stack', async () => {
    const res = await platform.mgmt('/api/v1/agents/5f0c2a9e-7b1d-4c3e-9a8f-1d2e3f4a5b6c');
    expect(res.status).toBe(404);
    const lines = await linesOf(res);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: INFO, msg: 'request completed', status: 404, error: 'NOT_FOUND', detail: expect.any(String) });
    expect(JSON.stringify(lines[0])).not.toContain('stack');
  });

  it('logs a validation failure once, with a bounded and clean detail', async () => {
    const input = `evil\n{"level":60}${'x'.repeat(100_000)}`;
    const res = await platform.mgmt('/api/v1/agents', { method: 'POST', body: JSON.stringify({ name: input, nonsense: input }) });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const lines = await linesOf(res);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: INFO, status: res.status, error: expect.any(String) });
    expect(lines[0].detail.length).toBeLessThan(300);
    expect(JSON.stringify(lines[0])).not.toContain('{"level":60}');
  });

  it("logs a stub's 501 once, at info, without a stack", async () => {
    const res = await platform.mgmt('/api/v1/agents', { headers: { 'x-test-fail': 'stub' } });
    expect(res.status).toBe(501);
    expect((await res.clone().json()).trace_id).toMatch(/^trc_/);
    const lines = await linesOf(res);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: INFO, status: 501, error: 'NOT_IMPLEMENTED' });
    expect(JSON.stringify(lines[0])).not.toContain('stack');
  });

  it('logs a server failure once, at error, with its cause', async () => {
    const res = await platform.mgmt('/api/v1/agents', { headers: { 'x-test-fail': 'crash' } });
    expect(res.status).toBe(500);
    const lines = await linesOf(res);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: ERROR,
      status: 500,
      error: 'INTERNAL_ERROR',
      err: { message: 'database on fire', stack: expect.stringContaining('database on fire') },
    });
  });

  it('logs a success once, without error fields', async () => {
    const res = await platform.mgmt('/api/v1/agents');
    expect(res.status).toBe(200);
    const lines = await linesOf(res);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: INFO, msg: 'request completed', status: 200 });
    expect(lines[0].error).toBeUndefined();
  });
});

describe('logSafe', () => {
  it('keeps a short value, strips control characters and cuts a long one', () => {
    expect(logSafe('oc_client')).toBe('oc_client');
    expect(logSafe('a\u0000b\nc\u2028d')).toBe('abcd');
    expect(logSafe('x'.repeat(10_000_000))).toBe(`${'x'.repeat(64)}…`);
  });
});
