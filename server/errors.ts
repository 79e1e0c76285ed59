// The one error type of the server: services throw it with a named code from the contract's
// error catalog; the HTTP layer renders it in the operation's declared error shape.
import { errorCatalog, type ErrorName } from '../generated/contract/errors.js';

export interface ValidationIssue {
  loc: string[];
  msg: string;
  type: string;
  input?: unknown;
}

export interface ApiErrorOptions {
  /** HTTP status when it differs from the catalog's (e.g. search's 403 for an empty query). */
  status?: number;
  /** Short machine code for gateway-style bodies, e.g. `unauthorized_missing_authorization`. */
  gatewayCode?: string;
  param?: string;
  issues?: ValidationIssue[];
  /** Coding-agent route refusals say whether a top-up would help. */
  topupAvailable?: boolean;
  headers?: Record<string, string>;
  cause?: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly errorName: ErrorName,
    message: string,
    readonly options: ApiErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'ApiError';
    this.status = options.status ?? errorCatalog[errorName].status;
  }
}
