// What an upstream failure means for the caller (an ApiError of the catalog) and for the
// gateway (fail over or not, and whether it counts against the deployment's health).
import type { ErrorName } from '../../generated/contract/errors.js';
import { ApiError } from '../errors.js';
import { ProviderError, type ProviderErrorKind } from '../providers/types.js';

interface KindFacts {
  error: ErrorName;
  /** Another deployment may succeed where this one failed. */
  failover: boolean;
  /** The deployment, not the request, is at fault: feeds its circuit breaker. */
  unhealthy: boolean;
}

const KINDS: Record<ProviderErrorKind, KindFacts> = {
  timeout: { error: 'PROVIDER_TIMEOUT', failover: true, unhealthy: true },
  rate_limit: { error: 'RATE_LIMIT', failover: true, unhealthy: false },
  // Spec 7.1/7.2: an upstream failing while it runs inference is 500 PROVIDER_INFERENCE_ERROR (2013).
  server: { error: 'PROVIDER_INFERENCE_ERROR', failover: true, unhealthy: true },
  unavailable: { error: 'PROVIDER_UNAVAILABLE', failover: true, unhealthy: true },
  connection_dropped: { error: 'CONNECTION_DROPPED', failover: true, unhealthy: true },
  malformed_stream: { error: 'MALFORMED_PROVIDER_STREAM', failover: true, unhealthy: true },
  empty_stream: { error: 'EMPTY_STREAM', failover: true, unhealthy: true },
  prefix_refused: { error: 'PROVIDER_BAD_REQUEST', failover: true, unhealthy: false },
  // The request itself cannot succeed anywhere: never retried on another deployment.
  bad_request: { error: 'PROVIDER_BAD_REQUEST', failover: false, unhealthy: false },
  context_length: { error: 'CONTEXT_WINDOW_EXCEEDED', failover: false, unhealthy: false },
  content_filter: { error: 'CONTENT_FILTERED', failover: false, unhealthy: false },
  // The platform's credential for that upstream is wrong: an operator must fix it.
  auth: { error: 'PROVIDER_AUTH_ERROR', failover: false, unhealthy: true },
};

export function kindFacts(error: unknown): KindFacts & { kind: ProviderErrorKind | null } {
  if (error instanceof ProviderError) return { ...KINDS[error.kind], kind: error.kind };
  return { error: 'INTERNAL_ERROR', failover: false, unhealthy: false, kind: null };
}

const MESSAGES: Partial<Record<ProviderErrorKind, string>> = {
  timeout: 'The model provider did not answer in time.',
  rate_limit: 'The model provider rate-limited the request.',
  server: 'The model provider failed while generating the answer.',
  unavailable: 'The model provider is unavailable and no healthy fallback could take the request.',
  connection_dropped: 'The connection to the model provider dropped.',
  malformed_stream: 'The model provider sent a stream that could not be parsed.',
  empty_stream: 'The model provider ended the stream without any content.',
  bad_request: 'The model provider rejected the request.',
  auth: "The platform's credential for the model provider was rejected.",
  context_length: "The request exceeds the model's context window.",
  content_filter: "The model provider's content filter rejected the request; do not retry it unchanged.",
};

/** The caller's view of an upstream failure; upstream bodies and keys never reach it. */
export function toCallerError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (!(error instanceof ProviderError)) return new ApiError('INTERNAL_ERROR', 'Internal error', { cause: error });
  const facts = KINDS[error.kind];
  const headers: Record<string, string> = {};
  if (error.kind === 'rate_limit' && error.details.retryAfterMs) headers['Retry-After'] = String(Math.ceil(error.details.retryAfterMs / 1000));
  return new ApiError(facts.error, MESSAGES[error.kind] ?? error.message, { cause: error, headers });
}

/**
 * A failure as deployment health keeps it (and the management API shows it): its kind, the
 * upstream's HTTP status and which timeout fired, never upstream text, which may echo a key.
 */
export function failureSummary(error: unknown): string {
  if (!(error instanceof ProviderError)) return 'error';
  const { status, timeout } = error.details;
  return `${error.kind}${status ? ` (HTTP ${status})` : ''}${timeout ? ` (${timeout} timeout)` : ''}`;
}
