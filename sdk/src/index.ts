// @inference-platform/sdk — TypeScript client of the AI inference and data platform.
// One entry for Node 20+, browsers and edge runtimes: fetch only, no Node built-ins.
// What a user imports: the client, its options, the error classes, the stream and page
// types, and the request / response types by readable name. The generated client's
// internals (hey-api's `*Data` / `*Responses` / `*Errors` types, its client) are not exported.
export { Platform, type PlatformOptions } from './client.js';
export { VERSION } from './version.js';
// The operation types the low-level methods (`client.<operationId>`, `client.call`) are written with.
export type {
  BodyOf,
  DataOf,
  Operation,
  OperationMethod,
  ParamsOf,
  PathOf,
  QueryOf,
  RequestArgs,
  RequestOptions,
  ResultOf,
  StreamingMethod,
  StreamOf,
} from './operations.js';
/** The client's namespaces (`PlatformResources`, `ManagementAgentsResource`, ...) and flat methods (`PlatformOperations`). */
export type * from '../../generated/sdk/resources.js';

export { APIPromise, PagePromise, type CursorPage, type PageItem, type WithResponse } from './core/api-promise.js';
export type { ClientCredentials } from './core/auth.js';
export type { RateLimitInfo, RouteAttempt } from './core/headers.js';
export type { RetryPolicy } from './core/retry.js';
export type { Fetch, RetryEvent } from './core/transport.js';
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
  isErrorNamed,
  type APIErrorInit,
  type ErrorCategory,
  type ErrorName,
  type NamedAPIError,
  type NamedErrorClass,
  type ValidationIssue,
} from './core/errors.js';
export * from './named-errors.js';
export { ValidationError } from './named-errors.js';

/** Request and response types by readable name (generated from sdk-resources.map.json). */
export type * from '../../generated/sdk/types.js';
