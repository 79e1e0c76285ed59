// Status and error-body classification of the shared HTTP client (the transport itself is
// exercised over real HTTP by the adapter tests).
import { describe, expect, it } from 'vitest';
import { httpError, parseRetryAfter, streamError, UpstreamResponse } from '../../server/providers/http-client.js';

const openaiError = (code: string | null, message = 'm') => JSON.stringify({ error: { message, type: 'invalid_request_error', code } });
const anthropicError = (type: string, message: string) => JSON.stringify({ type: 'error', error: { type, message } });

describe('parseRetryAfter', () => {
  it('prefers retry-after-ms, then seconds, then an HTTP date', () => {
    expect(parseRetryAfter({ 'retry-after-ms': '1500', 'retry-after': '9' })).toBe(1500);
    expect(parseRetryAfter({ 'retry-after': '2.5' })).toBe(2500);
    const inFive = new Date(Date.now() + 5000).toUTCString();
    expect(parseRetryAfter({ 'retry-after': inFive })).toBeGreaterThan(3000);
    expect(parseRetryAfter({ 'retry-after': inFive })).toBeLessThanOrEqual(5000);
    expect(parseRetryAfter({ 'retry-after': new Date(Date.now() - 60_000).toUTCString() })).toBe(0);
    expect(parseRetryAfter({ 'retry-after': 'soon' })).toBeUndefined();
    expect(parseRetryAfter({})).toBeUndefined();
  });
});

describe('httpError', () => {
  it.each([
    [429, '{}', 'rate_limit'],
    [401, '{}', 'auth'],
    [403, '{}', 'auth'],
    [408, '{}', 'timeout'],
    [504, '{}', 'timeout'],
    [500, '{}', 'server'],
    [502, 'Bad Gateway', 'server'],
    [503, '{}', 'unavailable'],
    [529, anthropicError('overloaded_error', 'Overloaded'), 'unavailable'],
    [400, openaiError('context_length_exceeded'), 'context_length'],
    [400, anthropicError('invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'), 'context_length'],
    [400, openaiError('content_filter'), 'content_filter'],
    [400, openaiError('content_policy_violation'), 'content_filter'],
    [400, JSON.stringify({ error: { code: null, innererror: { code: 'ResponsibleAIPolicyViolation' } } }), 'content_filter'],
    [400, openaiError('invalid_value'), 'bad_request'],
    [404, openaiError('model_not_found'), 'bad_request'],
    [422, 'not json', 'bad_request'],
  ])('%i %s → %s', (status, body, kind) => {
    const err = httpError(status, {}, body);
    expect(err.kind).toBe(kind);
    expect(err.details.status).toBe(status);
  });

  it('carries the Retry-After of a 429 and the upstream message', () => {
    const err = httpError(429, { 'retry-after': '7' }, openaiError('rate_limit_exceeded', 'Slow down'));
    expect(err.details.retryAfterMs).toBe(7000);
    expect(err.message).toBe('upstream 429: Slow down');
  });
});

describe('streamError', () => {
  it.each([
    [{ type: 'overloaded_error', message: 'Overloaded' }, 'unavailable'],
    [{ type: 'rate_limit_error', message: 'x' }, 'rate_limit'],
    [{ type: 'requests', code: 'rate_limit_exceeded', message: 'x' }, 'rate_limit'],
    [{ type: 'api_error', message: 'x' }, 'server'],
    [{ type: 'authentication_error', message: 'x' }, 'auth'],
    [{ type: 'invalid_request_error', code: 'context_length_exceeded', message: 'x' }, 'context_length'],
    [{ type: 'invalid_request_error', message: 'bad' }, 'bad_request'],
    ['garbage', 'server'],
  ])('%j → %s', (error, kind) => {
    expect(streamError(error).kind).toBe(kind);
  });
});

describe('UpstreamResponse (a stream body as undici pushes it)', () => {
  /** The part of undici's DispatchController the body drives: pause and resume. */
  function controller() {
    const state = { aborted: false, paused: false, reason: null, pauses: 0, resumes: 0 };
    return Object.assign(state, {
      abort() {},
      pause() {
        state.paused = true;
        state.pauses++;
      },
      resume() {
        state.paused = false;
        state.resumes++;
      },
    });
  }
  const opened = async () => {
    const res = new UpstreamResponse();
    const c = controller();
    const open = res.open({ dispatch: () => true } as never, { method: 'POST', path: '/' }, 'headers');
    res.onRequestStart(c);
    res.onResponseStart(c, 200, {});
    await open;
    return { res, c };
  };

  it('pauses the socket while 64 KiB or more waits unread, and resumes it as the reader catches up', async () => {
    const { res, c } = await opened();
    let woken = 0;
    res.onActivity = () => woken++;
    res.onResponseData(c, Buffer.alloc(40 * 1024, 'a'));
    expect(c.paused).toBe(false);
    res.onResponseData(c, Buffer.alloc(40 * 1024, 'b'));
    expect([c.paused, woken]).toEqual([true, 2]);
    expect(res.read()?.[0]).toBe(0x61);
    expect([c.paused, c.resumes]).toEqual([false, 1]);
    expect(res.read()?.[0]).toBe(0x62);
    expect(res.read()).toBeNull();
  });

  it('after discard() drops what is unread and what still comes, and resumes a paused socket to read to the end', async () => {
    const { res, c } = await opened();
    res.onResponseData(c, Buffer.alloc(70 * 1024));
    expect(c.paused).toBe(true);
    res.discard();
    expect(c.paused).toBe(false);
    res.onResponseData(c, Buffer.from('data: more\n\n'));
    expect(res.read()).toBeNull();
    let ended = false;
    res.onActivity = () => (ended = res.ended);
    res.onResponseEnd();
    expect([ended, res.error]).toEqual([true, undefined]);
  });
});
