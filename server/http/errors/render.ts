// Renders an ApiError in whichever body shape the contract declares for the operation and
// status (AI envelope, gateway body, FastAPI detail, ...).
import { errorCatalog, type ErrorName } from '../../../generated/contract/errors.js';
import type { RouteDefinition } from '../../../generated/contract/routes.js';
import { bounded, cut, type Bounds } from '../../bounded.js';
import { ApiError, type ValidationIssue } from '../../errors.js';

export type ErrorSchemaName =
  | 'AIError'
  | 'CodingAIError'
  | 'GatewayError'
  | 'DetailError'
  | 'ValidationError'
  | 'EmbeddingsValidationError'
  | 'ManagementError'
  | 'OAuthError';

/**
 * The body shape for an error: the one the contract declares for this status, else the
 * shape the operation uses for its other errors, else the server's default.
 */
export function errorSchemaFor(route: RouteDefinition | undefined, error: ApiError, api: 'api' | 'management'): ErrorSchemaName {
  // A completion's 422 is a validation failure or a provider content filter (an AI error).
  if (error.status === 422 && error.errorName !== 'VALIDATION_ERROR' && route && familyShape(route) === 'AIError') return 'AIError';
  const declared = route?.errorBodies[error.status] ?? (route ? familyShape(route) : undefined);
  if (declared) return declared as ErrorSchemaName;
  return api === 'management' ? 'ManagementError' : 'GatewayError';
}

/** The shape an operation uses for errors it does not declare (413, 501, ...). */
function familyShape(route: RouteDefinition): string | undefined {
  const shapes = Object.entries(route.errorBodies)
    .filter(([status]) => status !== '401' && status !== '422')
    .map(([, shape]) => shape);
  return shapes[0] ?? route.errorBodies[401];
}

const OAUTH_ERRORS: Partial<Record<ErrorName, string>> = {
  UNAUTHORIZED: 'invalid_client',
  FORBIDDEN: 'invalid_client',
  VALIDATION_ERROR: 'invalid_request',
  INVALID_REQUEST: 'invalid_request',
  INTERNAL_ERROR: 'server_error',
};

/**
 * How much of the input a finding quotes back (spec 2.6's `detail[].input`), and of a path
 * segment (`loc` may hold a caller's object keys): at most 256 characters as JSON, four
 * levels deep, in the input's own shape. The whole of a 100,000-element array made a 3.1 MB
 * answer, and a body of 20,000 nested arrays exhausted the stack rendering it.
 */
export const QUOTE_BOUNDS: Bounds = { total: 256, string: 256, depth: 4 };

/** An issue as an answer may quote it: its input and path segments within QUOTE_BOUNDS. */
export function quotable(issue: ValidationIssue): ValidationIssue {
  const loc = issue.loc.map((segment) => cut(segment, QUOTE_BOUNDS.string));
  return 'input' in issue ? { ...issue, loc, input: bounded(issue.input, QUOTE_BOUNDS) } : { ...issue, loc };
}

export function renderError(error: ApiError, schema: ErrorSchemaName, traceId: string): Record<string, unknown> {
  const entry = errorCatalog[error.errorName];
  const issues = (error.options.issues ?? []).map(quotable);
  switch (schema) {
    case 'AIError':
    case 'CodingAIError': {
      const body: Record<string, unknown> = {
        error: {
          code: entry.code,
          name: error.errorName,
          message: error.message,
          retryable: entry.retryable,
          category: entry.category,
          description: entry.description,
          param: error.options.param ?? null,
          type: openAIType(error.status),
        },
        trace_id: traceId,
      };
      if (schema === 'CodingAIError' || error.options.topupAvailable !== undefined) {
        body.topup_available = error.options.topupAvailable ?? false;
      }
      return body;
    }
    case 'ValidationError': {
      const detail = issues.length > 0 ? issues : [{ loc: [], msg: error.message, type: 'value_error' }];
      const first = detail[0];
      const param = first.loc.length > 1 ? first.loc.slice(1).join('.') : null;
      // OpenAI clients read `error`; without it they show a 422 as "(no body)".
      const message = `${first.loc.join('.') || 'body'}: ${first.msg}${detail.length > 1 ? ` (and ${detail.length - 1} more)` : ''}`;
      return { detail, error: { message, type: 'invalid_request_error', param, code: first.type }, trace_id: traceId };
    }
    case 'EmbeddingsValidationError': {
      const first = issues[0];
      const param = error.options.param ?? first?.loc.slice(1).join('.');
      const detail = {
        message: first ? `${first.loc.join('.')}: ${first.msg}` : error.message,
        type: 'invalid_request_error',
        code: first?.type ?? error.errorName.toLowerCase(),
        retryable: false,
        ...(param ? { param } : {}),
      };
      return { detail, error: { message: detail.message, type: detail.type, param: param ?? null, code: detail.code }, trace_id: traceId };
    }
    case 'DetailError':
      return { detail: error.message, trace_id: traceId };
    case 'ManagementError':
      return {
        error: {
          code: error.options.gatewayCode ?? error.errorName.toLowerCase(),
          message: error.message,
          ...(issues.length > 0 ? { details: issues } : {}),
        },
        meta: { requestId: traceId, hasMore: false, nextCursor: null },
        trace_id: traceId,
      };
    case 'OAuthError':
      return {
        error: error.options.gatewayCode ?? OAUTH_ERRORS[error.errorName] ?? 'invalid_request',
        error_description: error.message,
        trace_id: traceId,
      };
    case 'GatewayError':
      return { error: error.message, code: error.options.gatewayCode ?? error.errorName.toLowerCase(), trace_id: traceId };
  }
}

/** OpenAI's error `type` for a status, so OpenAI clients classify our errors as theirs. */
function openAIType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 402) return 'insufficient_quota';
  return status >= 500 || status === 408 ? 'server_error' : 'invalid_request_error';
}

/** Anything thrown that is not an ApiError is an internal error; its message stays in the log. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError('INTERNAL_ERROR', 'Internal error', { cause: error });
}
