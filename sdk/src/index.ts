// @inference-platform/sdk — TypeScript client of the AI inference and data platform.
// One entry for Node 20+, browsers and edge runtimes: fetch only, no Node built-ins.
export { Platform, type PlatformOptions } from './client.js';
export type {
  DataOf,
  Operation,
  OperationId,
  OperationMethod,
  ParamsOf,
  PlatformOperations,
  RequestArgs,
  RequestOptions,
  ResultOf,
  StreamOf,
  StreamingMethod,
} from './operations.js';

export { APIPromise, PagePromise, type CursorPage, type PageItem, type WithResponse } from './core/api-promise.js';
export type { ClientCredentials } from './core/auth.js';
export type { RateLimitInfo } from './core/headers.js';
export {
  DEFAULT_MAX_RETRIES,
  DEFAULT_RETRY_POLICY,
  DEFAULT_STREAM_MAX_RETRIES,
  NEVER_RETRIED,
  backoffDelay,
  decideRetry,
  type RetryContext,
  type RetryDecision,
  type RetryPolicy,
} from './core/retry.js';
export type { Fetch, RetryEvent } from './core/transport.js';
export { IDEMPOTENCY_HEADER } from './core/idempotency.js';
export {
  ChatCompletionStream,
  ResponseStream,
  Stream,
  type ChatCompletionStreamResult,
  type ChatFinishReason,
  type ResponseStreamEventMap,
  type ResponseStreamEventName,
  type ResponseStreamResult,
} from './core/streaming.js';

export {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIResponseParseError,
  APIUserAbortError,
  AuthenticationError,
  BadGatewayError,
  BadRequestError,
  ConflictError,
  GatewayTimeoutError,
  InternalServerError,
  NotFoundError,
  NotImplementedError,
  PayloadTooLargeError,
  PaymentRequiredError,
  PermissionDeniedError,
  PlatformError,
  RateLimitError,
  RequestTimeoutError,
  ServiceUnavailableError,
  UnprocessableEntityError,
  errorCatalog,
  errorClasses,
  isErrorNamed,
  makeAPIError,
  statusErrorClasses,
  type APIErrorInit,
  type ErrorCategory,
  type ErrorClassName,
  type ErrorClassOf,
  type ErrorClasses,
  type ErrorName,
  type NamedAPIError,
  type NamedErrorClass,
  type ValidationIssue,
} from './core/errors.js';
export * from './named-errors.js';
// Named explicitly: the class wins over the contract's `ValidationError` body type (still `Schemas.ValidationError`).
export { ValidationError } from './named-errors.js';

/** Request and response shapes of the contract (also exported one by one below). */
export type * as Schemas from '../../generated/client/types.gen.js';
export type * from '../../generated/client/types.gen.js';
