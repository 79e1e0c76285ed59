// Typed errors. Every failure the SDK reports is a `PlatformError`; every answer of the
// platform that is not a success (and every in-stream error event) is an `APIError`
// subclass chosen by its symbolic name (from the contract's error catalog) or, failing
// that, by its HTTP status. The server's several error body shapes are all parsed here.
import { errorCatalog, type ErrorCategory, type ErrorName } from '../../../generated/contract/errors.js';
import { parseRateLimit, parseRetryAfter, traceIdOf, type RateLimitInfo } from './headers.js';

export type { ErrorCategory, ErrorName };
export { errorCatalog };

/** One failing field of a 422 (`detail[]` of `ValidationError`, `error.details` of management). */
export interface ValidationIssue {
  loc: string[];
  msg: string;
  type: string;
  input?: unknown;
}

/** Base class of every error thrown by the SDK. */
export class PlatformError extends Error {
  override name = 'PlatformError';
}

export interface APIErrorInit {
  /** HTTP status of the answer; for an in-stream error, the catalog status of its name. */
  status: number;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body?: unknown;
  headers?: Headers;
  /** True when the error arrived as an event inside a 200 stream. */
  inStream?: boolean;
  /**
   * The class was chosen by the status alone (set by `makeAPIError` when the body names no
   * error): `name` and the class follow the status, but `code` and `category` stay undefined
   * and `retryable` follows the status, since nothing stated them.
   */
  nameFromStatus?: boolean;
}

type Json = Record<string, unknown>;
/** A JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const isCatalogName = (v: unknown): v is ErrorName => typeof v === 'string' && Object.prototype.hasOwnProperty.call(errorCatalog, v);

/** Catalog name of each numeric code, for bodies that send `code` without `name`. */
const NAME_BY_CODE: ReadonlyMap<number, ErrorName> = new Map(
  (Object.keys(errorCatalog) as ErrorName[]).map((name) => [errorCatalog[name].code as number, name]),
);

/** Symbolic name assumed for a status when the body names none. */
const NAME_BY_STATUS: Partial<Record<number, ErrorName>> = {
  400: 'INVALID_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  408: 'PROVIDER_TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  422: 'VALIDATION_ERROR',
  429: 'QUOTA_EXCEEDED',
  500: 'INTERNAL_ERROR',
  501: 'NOT_IMPLEMENTED',
  503: 'SERVICE_UNAVAILABLE',
};

/** Statuses worth retrying when neither the body nor the catalog says otherwise. */
export const RETRYABLE_STATUSES: readonly number[] = [408, 429, 500, 502, 503, 504];

interface ParsedBody {
  message?: string | undefined;
  name?: string | undefined;
  /** The name was stated by the server (not inferred from the status). */
  explicitName: boolean;
  code?: number | string | undefined;
  retryable?: boolean | undefined;
  category?: ErrorCategory | undefined;
  description?: string | undefined;
  param?: string | null | undefined;
  details?: ValidationIssue[] | undefined;
  traceId?: string | undefined;
  topupAvailable?: boolean | undefined;
  requestId?: string | undefined;
}

/**
 * Reads any of the platform's error bodies: AIError `{error:{code,name,...}, trace_id}`,
 * CodingAIError (+ `topup_available`), GatewayError `{error, code}`, DetailError
 * `{detail: string}`, ValidationError `{detail: [...]}`, EmbeddingsValidationError
 * `{detail: {...}}`, ManagementError `{error:{code,message,details}, meta}`, OAuthError
 * `{error, error_description}`, and plain text.
 */
export function parseErrorBody(body: unknown): ParsedBody {
  const out: ParsedBody = { explicitName: false };
  if (typeof body === 'string') {
    const text = body.trim();
    if (text) out.message = text.length > 500 ? `${text.slice(0, 500)}…` : text;
    return out;
  }
  if (!isObject(body)) return out;
  out.traceId = str(body.trace_id);
  if (typeof body.topup_available === 'boolean') out.topupAvailable = body.topup_available;
  if (isObject(body.meta)) out.requestId = str(body.meta.requestId);

  const { error, detail } = body;
  // A body with `detail` (422s) also carries OpenAI's `error` mirror of it: `detail` is the truth.
  if (typeof detail === 'string') {
    out.message = detail;
  } else if (Array.isArray(detail)) {
    out.details = detail as ValidationIssue[];
    out.message = detail
      .map((d) => (isObject(d) ? `${Array.isArray(d.loc) ? d.loc.join('.') : '?'}: ${str(d.msg) ?? 'invalid'}` : String(d)))
      .join('; ');
  } else if (isObject(detail)) {
    // EmbeddingsValidationError
    out.message = str(detail.message);
    out.code = str(detail.code);
    if (typeof detail.retryable === 'boolean') out.retryable = detail.retryable;
    if (typeof detail.param === 'string' || detail.param === null) out.param = detail.param;
  } else if (isObject(error)) {
    // AIError / CodingAIError (numeric code + symbolic name) or ManagementError (string code).
    out.message = str(error.message);
    if (typeof error.code === 'number' || typeof error.code === 'string') out.code = error.code;
    // A string code (management) names the error when it is a catalog name ('not_found');
    // a numeric code without a name (`{code: 1005}`) names it through the catalog.
    const upper = typeof error.code === 'string' ? error.code.toUpperCase() : undefined;
    const named =
      str(error.name) ?? (isCatalogName(upper) ? upper : typeof error.code === 'number' ? NAME_BY_CODE.get(error.code) : undefined);
    if (named) {
      out.name = named;
      out.explicitName = true;
    }
    if (typeof error.retryable === 'boolean') out.retryable = error.retryable;
    if (error.category === 'client' || error.category === 'provider' || error.category === 'platform') out.category = error.category;
    out.description = str(error.description);
    if (typeof error.param === 'string' || error.param === null) out.param = error.param;
    if (Array.isArray(error.details)) out.details = error.details as ValidationIssue[];
  } else if (typeof error === 'string') {
    // GatewayError `{error, code}` or OAuthError `{error, error_description}`.
    out.message = str(body.error_description) ?? error;
    const code = str(body.code) ?? error;
    out.code = code;
    if (isCatalogName(code.toUpperCase())) {
      out.name = code.toUpperCase();
      out.explicitName = true;
    }
  } else {
    out.message = str(body.message);
  }
  return out;
}

/**
 * An answer of the platform that is not a success, or an error event inside a stream.
 * `name` is the symbolic code (e.g. `SPENDING_LIMIT_EXCEEDED`; `HTTP_<status>` when
 * nothing names it); the class says the same thing for `instanceof`
 * (e.g. `SpendingLimitExceededError`).
 */
export class APIError extends PlatformError {
  /** HTTP status (for an in-stream error: the status the catalog gives its name). */
  readonly status: number;
  /**
   * The code the server sent (numeric internal code, or a gateway / management machine
   * code); the catalog's numeric code when the body named the error without a code;
   * undefined when the body named nothing (the class then follows the status).
   */
  readonly code: number | string | undefined;
  /** Whether the same request may succeed when retried (body first, then catalog, then status). */
  readonly retryable: boolean;
  /** Fault attribution: `client`, `provider` or `platform`; undefined when nothing names the error (e.g. a proxy's bare 408). */
  readonly category: ErrorCategory | undefined;
  /** Trace id for support: the body's `trace_id`, else the `X-Trace-Id` header. */
  readonly traceId: string | undefined;
  /** Response headers (the stream's headers for an in-stream error). */
  readonly headers: Headers;
  /** The parsed error body as received. */
  readonly body: unknown;
  readonly description: string | undefined;
  /** Request field the error is about, when the server says. */
  readonly param: string | null | undefined;
  /** Failing fields of a validation error. */
  readonly details: ValidationIssue[] | undefined;
  /** 402 of the coding-agent route: whether a top-up can be bought. */
  readonly topupAvailable: boolean | undefined;
  /** `Retry-After` (or `retry-after-ms`) in milliseconds, when sent. */
  readonly retryAfterMs: number | undefined;
  /** `X-RateLimit-*` headers, when sent. */
  readonly rateLimit: RateLimitInfo | undefined;
  readonly inStream: boolean;

  constructor(init: APIErrorInit) {
    const parsed = parseErrorBody(init.body);
    const headers = init.headers ?? new Headers();
    const defaultName = (new.target as { errorName?: string }).errorName;
    const name = parsed.name ?? defaultName ?? NAME_BY_STATUS[init.status] ?? `HTTP_${init.status}`;
    // A name the server stated (or the class a caller chose) carries its catalog entry; a
    // name inferred from the status only gives `name` and the class: nothing is invented.
    const stated = parsed.explicitName || (defaultName !== undefined && !init.nameFromStatus);
    const entry = stated && isCatalogName(name) ? errorCatalog[name] : undefined;
    const retryable = parsed.retryable ?? entry?.retryable ?? RETRYABLE_STATUSES.includes(init.status);
    const traceId = parsed.traceId ?? traceIdOf(headers);
    const text = parsed.message ?? entry?.description ?? `HTTP ${init.status}`;
    super(`${init.inStream ? 'stream' : init.status} ${name}: ${text}${traceId ? ` (trace_id ${traceId})` : ''}`);
    this.name = name;
    this.status = init.status;
    this.code = parsed.code ?? entry?.code;
    this.retryable = retryable;
    this.category = parsed.category ?? entry?.category;
    this.traceId = traceId;
    this.headers = headers;
    this.body = init.body;
    this.description = parsed.description ?? entry?.description;
    this.param = parsed.param;
    this.details = parsed.details;
    this.topupAvailable = parsed.topupAvailable;
    this.retryAfterMs = parseRetryAfter(headers);
    this.rateLimit = parseRateLimit(headers);
    this.inStream = init.inStream ?? false;
  }
}

// ---------------------------------------------------------------- one class per status
export class BadRequestError extends APIError {}
export class AuthenticationError extends APIError {}
export class PaymentRequiredError extends APIError {}
export class PermissionDeniedError extends APIError {}
export class NotFoundError extends APIError {}
export class RequestTimeoutError extends APIError {}
export class ConflictError extends APIError {}
export class PayloadTooLargeError extends APIError {}
export class UnprocessableEntityError extends APIError {}
export class RateLimitError extends APIError {}
export class InternalServerError extends APIError {}
export class NotImplementedError extends InternalServerError {}
export class BadGatewayError extends InternalServerError {}
export class ServiceUnavailableError extends InternalServerError {}
export class GatewayTimeoutError extends InternalServerError {}

/** The class for each HTTP status. */
export const statusErrorClasses = {
  400: BadRequestError,
  401: AuthenticationError,
  402: PaymentRequiredError,
  403: PermissionDeniedError,
  404: NotFoundError,
  408: RequestTimeoutError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: UnprocessableEntityError,
  429: RateLimitError,
  500: InternalServerError,
  501: NotImplementedError,
  502: BadGatewayError,
  503: ServiceUnavailableError,
  504: GatewayTimeoutError,
} as const;
type StatusClasses = typeof statusErrorClasses;

const statusClassesByName = {
  BadRequestError,
  AuthenticationError,
  PaymentRequiredError,
  PermissionDeniedError,
  NotFoundError,
  RequestTimeoutError,
  ConflictError,
  PayloadTooLargeError,
  UnprocessableEntityError,
  RateLimitError,
  InternalServerError,
  NotImplementedError,
  BadGatewayError,
  ServiceUnavailableError,
  GatewayTimeoutError,
} as const;
type StatusClassesByName = typeof statusClassesByName;

// ---------------------------------------------------------------- one class per named code
type Pascal<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Capitalize<Lowercase<Head>>}${Pascal<Tail>}` : Capitalize<Lowercase<S>>;
/** `SPENDING_LIMIT_EXCEEDED` → `SpendingLimitExceededError`, `INTERNAL_ERROR` → `InternalError`. */
export type ErrorClassName<K extends string> = Pascal<K> extends `${string}Error` ? Pascal<K> : `${Pascal<K>}Error`;

type CatalogStatus<K extends ErrorName> = (typeof errorCatalog)[K]['status'];
type StatusInstance<K extends ErrorName> = CatalogStatus<K> extends keyof StatusClasses ? InstanceType<StatusClasses[CatalogStatus<K>]> : APIError;

/** An error of the named code `K`: its status class, with `name` narrowed to `K`. */
export type NamedAPIError<K extends ErrorName> = StatusInstance<K> & { readonly name: K };
export interface NamedErrorClass<K extends ErrorName> {
  new (init: APIErrorInit): NamedAPIError<K>;
  readonly prototype: NamedAPIError<K>;
  readonly errorName: K;
}
/** Class of a named code; a code whose class name equals a status class (e.g. `RATE_LIMIT`) uses that class. */
export type ErrorClassOf<K extends ErrorName> =
  ErrorClassName<K> extends keyof StatusClassesByName ? StatusClassesByName[ErrorClassName<K>] : NamedErrorClass<K>;
export type ErrorClasses = { readonly [K in ErrorName]: ErrorClassOf<K> };

export function errorClassName(name: string): string {
  const pascal = name.toLowerCase().replace(/(?:^|_)([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  return pascal.endsWith('Error') ? pascal : `${pascal}Error`;
}

function buildErrorClasses(): ErrorClasses {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(errorCatalog) as ErrorName[]) {
    const className = errorClassName(name);
    const own = (statusClassesByName as Record<string, typeof APIError>)[className];
    if (own) {
      out[name] = own;
      continue;
    }
    const status = errorCatalog[name].status;
    const Parent: typeof APIError = (statusErrorClasses as Record<number, typeof APIError>)[status] ?? (status >= 500 ? InternalServerError : APIError);
    // A computed key gives the class its real name (shown in stack traces and `constructor.name`).
    const cls = { [className]: class extends Parent {} }[className]!;
    Object.defineProperty(cls, 'errorName', { value: name });
    out[name] = cls;
  }
  return out as ErrorClasses;
}

/** Every named code of the contract's error catalog, mapped to its error class. */
export const errorClasses: ErrorClasses = buildErrorClasses();

/**
 * Builds the typed error for a status and body: the class of its symbolic name (stated by
 * the body, else the generic name of the status), then the class of its status.
 */
export function makeAPIError(init: APIErrorInit): APIError {
  const stated = parseErrorBody(init.body).name;
  const name = stated ?? NAME_BY_STATUS[init.status];
  const byName = name && isCatalogName(name) ? (errorClasses[name] as unknown as typeof APIError) : undefined;
  const byStatus = (statusErrorClasses as Record<number, typeof APIError>)[init.status] ?? (init.status >= 500 ? InternalServerError : APIError);
  return new (byName ?? byStatus)(stated === undefined ? { ...init, nameFromStatus: true } : init);
}

/** Builds the typed error of an in-stream error event (`{error: AIErrorObject, trace_id}`). */
export function makeStreamError(error: unknown, traceId: unknown, headers: Headers): APIError {
  const name = parseErrorBody({ error }).name;
  const status = isCatalogName(name) ? errorCatalog[name].status : 500;
  return makeAPIError({ status, body: { error, trace_id: traceId }, headers, inStream: true });
}

/** The connection failed, or the answer could not be read (no HTTP status). */
export class APIConnectionError extends PlatformError {
  override name = 'APIConnectionError';
  /** The connection was never established (refused, unknown host): nothing reached the server. */
  connectFailed = false;
  /**
   * The runtime said nothing of why (a browser's `TypeError: Failed to fetch`): a refused
   * connection, an unknown host, a CORS refusal and a connection lost mid-request look
   * alike. Likely never connected, yet it may have reached the server.
   */
  reasonUnknown = false;
  constructor(message = 'Connection error.', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** No answer within the timeout. */
export class APIConnectionTimeoutError extends APIConnectionError {
  override name = 'APIConnectionTimeoutError';
  constructor(message = 'Request timed out.') {
    super(message);
  }
}

/**
 * A success answer whose body could not be read as its content type says (e.g. a 200
 * `application/json` that is not valid JSON). The request did run: it is not retried.
 */
export class APIResponseParseError extends PlatformError {
  override name = 'APIResponseParseError';
  /** HTTP status of the answer (2xx). */
  readonly status: number;
  readonly headers: Headers;
  /** `X-Trace-Id` of the answer. */
  readonly traceId: string | undefined;

  constructor(response: Pick<Response, 'status' | 'headers'>, options?: { cause?: unknown }) {
    const traceId = traceIdOf(response.headers);
    const cause = options?.cause;
    const reason = cause instanceof Error ? cause.message : cause === undefined ? 'unreadable body' : String(cause);
    super(`Could not parse the ${response.status} answer: ${reason}${traceId ? ` (trace_id ${traceId})` : ''}`, options);
    this.status = response.status;
    this.headers = response.headers;
    this.traceId = traceId;
  }
}

/** The caller aborted the request through its `AbortSignal`. */
export class APIUserAbortError extends PlatformError {
  override name = 'APIUserAbortError';
  constructor(message = 'Request was aborted.', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Type guard for a named code: `isErrorNamed(err, 'SPENDING_LIMIT_EXCEEDED')`. */
export function isErrorNamed<K extends ErrorName>(error: unknown, name: K): error is NamedAPIError<K> {
  return error instanceof APIError && error.name === name;
}
