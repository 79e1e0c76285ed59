// Renders an ApiError in whichever body shape the contract declares for the operation and
// status (AI envelope, gateway body, FastAPI detail, ...).
import { errorCatalog, type ErrorName } from '../../generated/contract/errors.js';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';

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
export function errorSchemaFor(route: RouteDefinition | undefined, status: number, api: 'api' | 'management'): ErrorSchemaName {
  const declared = route?.errorBodies[status] ?? (route ? familyShape(route) : undefined);
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
};

export function renderError(error: ApiError, schema: ErrorSchemaName, traceId: string): Record<string, unknown> {
  const entry = errorCatalog[error.errorName];
  const issues = error.options.issues ?? [];
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
          ...(error.options.param ? { param: error.options.param } : {}),
        },
        trace_id: traceId,
      };
      if (schema === 'CodingAIError' || error.options.topupAvailable !== undefined) {
        body.topup_available = error.options.topupAvailable ?? false;
      }
      return body;
    }
    case 'ValidationError':
      return { detail: issues.length > 0 ? issues : [{ loc: [], msg: error.message, type: 'value_error' }], trace_id: traceId };
    case 'EmbeddingsValidationError': {
      const first = issues[0];
      const param = error.options.param ?? first?.loc.slice(1).join('.');
      return {
        detail: {
          message: first ? `${first.loc.join('.')}: ${first.msg}` : error.message,
          type: 'invalid_request_error',
          code: first?.type ?? error.errorName.toLowerCase(),
          retryable: false,
          ...(param ? { param } : {}),
        },
        trace_id: traceId,
      };
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

/** Anything thrown that is not an ApiError is an internal error; its message stays in the log. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError('INTERNAL_ERROR', 'Internal error', { cause: error });
}
