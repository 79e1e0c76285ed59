// Reading the retry and rate-limit headers (spec 7.3: honour `Retry-After` when present;
// `X-RateLimit-*` may be absent).

/** `X-RateLimit-*` of an answer; each field only when its header was sent. */
export interface RateLimitInfo {
  limit?: number;
  remaining?: number;
  /** Seconds until the window resets (`X-RateLimit-Reset`). */
  resetSeconds?: number;
}

const number = (value: string | null): number | undefined => {
  if (value === null || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
};

/**
 * Milliseconds to wait according to `retry-after-ms`, or `Retry-After` as seconds or as an
 * HTTP date. `undefined` when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = number(headers.get('retry-after-ms'));
  if (ms !== undefined) return ms;
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = number(value);
  if (seconds !== undefined) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function parseRateLimit(headers: Headers): RateLimitInfo | undefined {
  const info: RateLimitInfo = {};
  const limit = number(headers.get('x-ratelimit-limit'));
  const remaining = number(headers.get('x-ratelimit-remaining'));
  const reset = number(headers.get('x-ratelimit-reset'));
  if (limit !== undefined) info.limit = limit;
  if (remaining !== undefined) info.remaining = remaining;
  if (reset !== undefined) info.resetSeconds = reset;
  return limit === undefined && remaining === undefined && reset === undefined ? undefined : info;
}

/** `X-Trace-Id` of an answer (the one place that reads it). */
export function traceIdOf(headers: Headers): string | undefined {
  return headers.get('x-trace-id') ?? undefined;
}

/** One upstream attempt of an inference answer's route: the catalog model, the deployment, and `ok` or how it failed. */
export interface RouteAttempt {
  model: string;
  deployment: string;
  outcome: string;
}

/**
 * `X-Gateway-Route` of an inference answer (`model=…; deployment=…; outcome=…, …`): every
 * upstream attempt the gateway made, in order; undefined when the answer has none.
 */
export function routeOf(headers: Headers): RouteAttempt[] | undefined {
  const value = headers.get('x-gateway-route');
  if (!value) return undefined;
  return value.split(',').map((attempt) => {
    const fields = new Map(attempt.split(';').map((field) => field.trim().split('=', 2) as [string, string]));
    return { model: fields.get('model') ?? '', deployment: fields.get('deployment') ?? '', outcome: fields.get('outcome') ?? '' };
  });
}
