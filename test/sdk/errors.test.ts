// Typed errors: every error body shape of the contract parsed into the same fields, the
// class chosen by symbolic name (from the generated error catalog) then by status.
import { describe, expect, it } from 'vitest';
import { errorCatalog as generatedCatalog } from '../../generated/contract/errors.js';
import * as sdk from '../../sdk/src/index.js';
import {
  APIError,
  AuthenticationError,
  BadGatewayError,
  BadRequestError,
  GcAllowanceExhaustedError,
  InternalServerError,
  NotFoundError,
  NotImplementedError,
  PermissionDeniedError,
  ProviderTimeoutError,
  RateLimitError,
  RequestTimeoutError,
  RoutingSelectorInvalidError,
  ServiceUnavailableError,
  SpendingLimitExceededError,
  UnprocessableEntityError,
  ValidationError,
  isErrorNamed,
  type ErrorName,
} from '../../sdk/src/index.js';
// The factories and tables behind the exported classes (not part of the package's exports).
import { errorClasses, makeAPIError, statusErrorClasses } from '../../sdk/src/core/errors.js';

const headers = (h: Record<string, string> = {}) => new Headers({ 'x-trace-id': 'trc_header', ...h });

describe('error body shapes', () => {
  it('AIError: numeric code, symbolic name, retryable, category, description, param, trace id', () => {
    const error = makeAPIError({
      status: 400,
      headers: headers(),
      body: {
        error: { code: 1001, name: 'ROUTING_SELECTOR_INVALID', message: 'Exactly one selector', retryable: false, category: 'client', description: 'None, or more than one', param: 'model_family' },
        trace_id: 'trc_body',
      },
    });
    expect(error).toBeInstanceOf(RoutingSelectorInvalidError);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, code: 1001, name: 'ROUTING_SELECTOR_INVALID', retryable: false, category: 'client', param: 'model_family', traceId: 'trc_body', description: 'None, or more than one' });
    expect(error.message).toBe('400 ROUTING_SELECTOR_INVALID: Exactly one selector (trace_id trc_body)');
    expect(error.headers.get('x-trace-id')).toBe('trc_header');
  });

  it('CodingAIError: topup_available on the 402', () => {
    const error = makeAPIError({
      status: 402,
      body: { error: { code: 1007, name: 'GC_ALLOWANCE_EXHAUSTED', message: 'spent', retryable: false, category: 'client', description: 'd' }, topup_available: false, trace_id: 't' },
    });
    expect(error).toBeInstanceOf(GcAllowanceExhaustedError);
    expect(error.topupAvailable).toBe(false);
  });

  it('GatewayError: string error and machine code; name from the status', () => {
    const e401 = makeAPIError({ status: 401, headers: headers(), body: { error: 'Missing Authorization', code: 'unauthorized_missing_authorization', trace_id: 'trc_g' } });
    expect(e401).toBeInstanceOf(AuthenticationError);
    expect(e401).toMatchObject({ name: 'UNAUTHORIZED', code: 'unauthorized_missing_authorization', retryable: false, category: undefined, traceId: 'trc_g' });
    expect(e401.message).toContain('Missing Authorization');
    const e403 = makeAPIError({ status: 403, body: { error: 'Invalid API key', code: 'forbidden', trace_id: 'trc_g' } });
    expect(e403).toBeInstanceOf(sdk.ForbiddenError);
    expect(e403).toBeInstanceOf(PermissionDeniedError);
    expect(e403.name).toBe('FORBIDDEN');
  });

  it('DetailError: detail string, per status', () => {
    const nf = makeAPIError({ status: 404, body: { detail: 'Item not found', trace_id: 'trc_d' } });
    expect(nf).toBeInstanceOf(NotFoundError);
    expect(nf).toMatchObject({ name: 'NOT_FOUND', traceId: 'trc_d', retryable: false, code: undefined, category: undefined });
    const bg = makeAPIError({ status: 502, body: { detail: 'Failed to update the vector store for this item', trace_id: 'trc_d' } });
    expect(bg).toBeInstanceOf(BadGatewayError);
    expect(bg).toBeInstanceOf(InternalServerError);
    expect(bg).toMatchObject({ name: 'HTTP_502', retryable: true, category: undefined, code: undefined });
  });

  it('ValidationError: detail list into details and a readable message', () => {
    const error = makeAPIError({ status: 422, body: { detail: [{ type: 'missing', loc: ['body', 'messages'], msg: 'Field required', input: null }], trace_id: 'trc_v' } });
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.details).toEqual([{ type: 'missing', loc: ['body', 'messages'], msg: 'Field required', input: null }]);
    expect(error.message).toContain('body.messages: Field required');
  });

  it('EmbeddingsValidationError: detail object with code, retryable and param', () => {
    const error = makeAPIError({ status: 422, body: { detail: { message: 'input: must be non-empty', type: 'invalid_request_error', code: 'invalid_input', retryable: false, param: 'input' }, trace_id: 'trc_e' } });
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error).toMatchObject({ code: 'invalid_input', retryable: false, param: 'input', name: 'VALIDATION_ERROR' });
  });

  it('ManagementError: string code mapped to the catalog name, details kept', () => {
    const nf = makeAPIError({ status: 404, body: { error: { code: 'not_found', message: 'Agent agt_1 not found.' }, meta: { requestId: 'req_1' }, trace_id: 'trc_m' } });
    expect(nf).toBeInstanceOf(NotFoundError);
    expect(nf).toMatchObject({ name: 'NOT_FOUND', code: 'not_found', traceId: 'trc_m' });
    const invalid = makeAPIError({ status: 422, body: { error: { code: 'validation_error', message: 'failed', details: [{ type: 'too_small', loc: ['query', 'limit'], msg: 'Must be at least 1' }] }, meta: { requestId: 'r' }, trace_id: 't' } });
    expect(invalid).toBeInstanceOf(ValidationError);
    expect(invalid.details?.[0]?.loc).toEqual(['query', 'limit']);
    const internal = makeAPIError({ status: 500, body: { error: { code: 'internal_error', message: 'x' }, meta: { requestId: 'r' }, trace_id: 't' } });
    expect(internal).toMatchObject({ name: 'INTERNAL_ERROR', retryable: true, category: 'platform' });
  });

  it('OAuthError: error and error_description', () => {
    const error = makeAPIError({ status: 401, body: { error: 'invalid_client', error_description: 'Unknown client.', trace_id: 'trc_o' } });
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ code: 'invalid_client', name: 'UNAUTHORIZED', traceId: 'trc_o' });
    expect(error.message).toContain('Unknown client.');
  });

  it('plain text and empty bodies: status class, trace id from X-Trace-Id', () => {
    const text = makeAPIError({ status: 503, headers: headers(), body: '<html>upstream down</html>' });
    expect(text).toBeInstanceOf(ServiceUnavailableError);
    expect(text).toMatchObject({ name: 'SERVICE_UNAVAILABLE', retryable: true, traceId: 'trc_header' });
    const empty = makeAPIError({ status: 418, headers: headers() });
    expect(empty.constructor).toBe(APIError);
    expect(empty).toMatchObject({ name: 'HTTP_418', retryable: false, category: undefined, code: undefined });
  });

  it('501 stubs are NotImplementedError and not retryable', () => {
    const error = makeAPIError({ status: 501, body: { error: { code: 3004, name: 'NOT_IMPLEMENTED', message: 'x', retryable: false, category: 'platform', description: 'd' }, trace_id: 't' } });
    expect(error).toBeInstanceOf(NotImplementedError);
    expect(error.retryable).toBe(false);
  });

  it('Retry-After and X-RateLimit-* are read from the headers', () => {
    const error = makeAPIError({ status: 429, headers: headers({ 'retry-after': '30', 'x-ratelimit-limit': '600', 'x-ratelimit-remaining': '0' }), body: {} });
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.retryAfterMs).toBe(30_000);
    expect(error.rateLimit).toEqual({ limit: 600, remaining: 0 });
  });
});

describe('classes from the generated error catalog', () => {
  const names = Object.keys(generatedCatalog) as ErrorName[];

  it('has a class for every named code, under its catalog status class', () => {
    for (const name of names) {
      const cls = errorClasses[name] as unknown as typeof APIError;
      const { status, code, retryable, category } = generatedCatalog[name];
      const parent = (statusErrorClasses as Record<number, typeof APIError>)[status] ?? APIError;
      const error = new cls({ status, body: { error: { code, name, message: 'm', retryable, category, description: 'd' }, trace_id: 't' } });
      expect(error, name).toBeInstanceOf(parent);
      expect(error).toMatchObject({ name, code, retryable, category, status });
      expect(makeAPIError({ status, body: { error: { name, code } } })).toBeInstanceOf(cls);
    }
  });

  it('names classes after the code, reusing a status class of the same name', () => {
    expect(errorClasses.SPENDING_LIMIT_EXCEEDED.name).toBe('SpendingLimitExceededError');
    expect(errorClasses.INTERNAL_ERROR.name).toBe('InternalError');
    expect(errorClasses.RATE_LIMIT).toBe(RateLimitError);
    expect(errorClasses.NOT_FOUND).toBe(NotFoundError);
    expect(new errorClasses.INSUFFICIENT_CREDIT({ status: 402 }).name).toBe('INSUFFICIENT_CREDIT');
  });

  it('exports each named class at the top level as the catalog class', () => {
    const exported = sdk as unknown as Record<string, unknown>;
    for (const name of names) {
      const cls = errorClasses[name] as unknown as { name: string };
      if (cls.name in exported) expect(exported[cls.name], cls.name).toBe(cls);
    }
    expect(SpendingLimitExceededError).toBe(errorClasses.SPENDING_LIMIT_EXCEEDED);
  });

  it('isErrorNamed narrows by name', () => {
    const error: unknown = makeAPIError({ status: 429, body: { error: { code: 1005, name: 'SPENDING_LIMIT_EXCEEDED', message: 'cap', retryable: false, category: 'client', description: 'd' }, trace_id: 't' } });
    expect(isErrorNamed(error, 'SPENDING_LIMIT_EXCEEDED')).toBe(true);
    expect(isErrorNamed(error, 'RATE_LIMIT')).toBe(false);
    if (isErrorNamed(error, 'SPENDING_LIMIT_EXCEEDED')) expect(error.status).toBe(429);
  });

  it('keeps an unknown symbolic name from a newer server, classed by status', () => {
    const error = makeAPIError({ status: 503, body: { error: { code: 3999, name: 'SOMETHING_NEW', message: 'm', retryable: true, category: 'platform', description: 'd' }, trace_id: 't' } });
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ name: 'SOMETHING_NEW', code: 3999, retryable: true });
  });
});

describe('nothing invented when the body names nothing', () => {
  it('a bare 404: NotFoundError named NOT_FOUND by its status, but no catalog code, category or description', () => {
    const error = makeAPIError({ status: 404, headers: headers() });
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, name: 'NOT_FOUND', code: undefined, category: undefined, description: undefined, retryable: false, traceId: 'trc_header' });
    expect(error.message).toBe('404 NOT_FOUND: HTTP 404 (trace_id trc_header)');
  });

  it("a proxy's 408 without a body: an HTTP-status error (class and name by status, category undefined), retried by status", () => {
    const error = makeAPIError({ status: 408, headers: new Headers({ server: 'nginx' }) });
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error).toBeInstanceOf(ProviderTimeoutError);
    expect(error).toMatchObject({ name: 'PROVIDER_TIMEOUT', code: undefined, category: undefined, retryable: true });
    expect(error.message).not.toContain('upstream provider');
  });

  it('a body that names the error still gets the catalog entry, and a class a caller picks keeps its own', () => {
    expect(makeAPIError({ status: 404, body: { error: { code: 'not_found', message: 'gone' } } })).toMatchObject({ code: 'not_found', category: 'client' });
    expect(makeAPIError({ status: 408, body: { error: { name: 'PROVIDER_TIMEOUT', message: 'slow' } } })).toMatchObject({ code: 2001, category: 'provider' });
    expect(new ProviderTimeoutError({ status: 408 })).toMatchObject({ code: 2001, category: 'provider', retryable: true });
  });
});

describe('numeric-only codes', () => {
  it('a 429 {error:{code:1005}} with no name is SPENDING_LIMIT_EXCEEDED (not retryable)', () => {
    const error = makeAPIError({ status: 429, headers: headers({ 'retry-after': '5' }), body: { error: { code: 1005 } } });
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
    expect(error).toMatchObject({ name: 'SPENDING_LIMIT_EXCEEDED', code: 1005, retryable: false, category: 'client' });
  });

  it('maps every numeric code of the catalog to its class', () => {
    for (const name of Object.keys(generatedCatalog) as ErrorName[]) {
      const { code, status } = generatedCatalog[name];
      const error = makeAPIError({ status, body: { error: { code } } });
      expect(error, name).toBeInstanceOf(errorClasses[name] as unknown as typeof APIError);
      expect(error.name, String(code)).toBe(name);
    }
  });

  it('an unknown numeric code keeps the status class', () => {
    expect(makeAPIError({ status: 503, body: { error: { code: 3999 } } })).toMatchObject({ name: 'SERVICE_UNAVAILABLE', code: 3999 });
  });
});

describe('top-level exports follow the catalog', () => {
  it('exports a class for every catalog name of generated/contract/errors.ts (a new code without its export fails here)', () => {
    const exported = sdk as unknown as Record<string, unknown>;
    const missing = (Object.keys(generatedCatalog) as ErrorName[]).filter((name) => exported[(errorClasses[name] as unknown as { name: string }).name] !== errorClasses[name]);
    expect(missing).toEqual([]);
    expect(sdk.IdempotencyKeyInUseError).toBe(errorClasses.IDEMPOTENCY_KEY_IN_USE);
    expect(new sdk.IdempotencyKeyInUseError({ status: 409 })).toBeInstanceOf(sdk.ConflictError);
  });
});
