// Status and error-body classification of the shared HTTP client (the transport itself is
// exercised over real HTTP by the adapter tests).
import { describe, expect, it } from 'vitest';
import { httpError, parseRetryAfter, streamError } from '../../server/providers/http-client.js';

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
