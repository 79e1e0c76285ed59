// No log line longer than a bound (server/logging.ts): whatever reaches the logger (request
// metadata, an upstream's error text, a caller's strings, a huge list) is cut by pino's own
// formatter and message serializer, while ordinary lines, errors and redaction stay as they were.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, LOG_BOUNDS } from '../../server/logging.js';

/** A line's values, its message and pino's own fields (level, time, pid, hostname). */
const LINE_MAX = LOG_BOUNDS.total + LOG_BOUNDS.string + 200;

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: createLogger('info', sink) };
}

describe('log lines', () => {
  it('carry a 9 MB metadata value, a huge list and a huge message cut to their bounds', () => {
    const { lines, logger } = capture();
    logger.info({ metadata: { note: 'x'.repeat(9_000_000) } }, 'response metadata');
    logger.info({ ids: Array.from({ length: 100_000 }, (_, i) => `id-${i}`) }, 'many');
    logger.warn('m'.repeat(1_000_000));
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(LINE_MAX);
    const [metadata, many, message] = lines.map((line) => JSON.parse(line));
    expect(metadata.metadata.note).toHaveLength(LOG_BOUNDS.string);
    expect(metadata.msg).toBe('response metadata');
    expect(many.ids.slice(0, 2)).toEqual(['id-0', 'id-1']);
    expect(message.msg).toHaveLength(LOG_BOUNDS.string);
  });

  it("bound an upstream's error text, in the error and in the message pino takes from it", () => {
    const { lines, logger } = capture();
    const error = new Error(`upstream 400: ${'y'.repeat(1_000_000)}`, { cause: new Error('socket closed') });
    logger.warn({ err: error, deployment: 'd1' }, 'upstream call failed');
    logger.error(error);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(LINE_MAX);
    const [withContext, alone] = lines.map((line) => JSON.parse(line));
    expect(withContext).toMatchObject({ deployment: 'd1', msg: 'upstream call failed', err: { type: 'Error', message: expect.stringMatching(/^upstream 400: y+…$/) } });
    expect(withContext.err.stack).toMatch(/^Error: upstream 400/);
    expect(alone.msg).toMatch(/^upstream 400: y+…$/);
    expect(alone.err.type).toBe('Error');
  });

  it('leave an ordinary line as it was, and still redact credentials', () => {
    const { lines, logger } = capture();
    const line = { traceId: 'trc_1', method: 'POST', path: '/ai/v2/responses', status: 200, durationMs: 1.5, capabilities: { vector: true, bm25: false } };
    logger.info(line, 'request completed');
    logger.info({ client: { secret: 'sk_secret', name: 'app' }, req: { headers: { authorization: 'Bearer sk_live' } } }, 'handler says');
    expect(JSON.parse(lines[0])).toMatchObject({ ...line, msg: 'request completed' });
    expect(JSON.parse(lines[1])).toMatchObject({ client: { name: 'app' }, req: { headers: {} } });
    expect(lines[1]).not.toContain('sk_');
  });
});
