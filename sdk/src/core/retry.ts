// The one place that decides whether a failed attempt is retried, and after how long
// (spec 7.3). The transport asks `decideRetry` after every failed attempt and does what
// it says; nothing else in the SDK retries.
import { APIConnectionError, APIError, APIUserAbortError, type ErrorName } from './errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt (4 → at most 5 attempts). */
  maxRetries: number;
  /** Backoff unit: retry n (0-based) waits `initialDelayMs * 2^n` plus jitter. */
  initialDelayMs: number;
  /** Cap of the exponential backoff (before jitter). */
  maxDelayMs: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown at once. */
  maxRetryAfterMs: number;
  /** Jitter added on top of the backoff, as a fraction of it (0.25 → up to +25 %). */
  jitter: number;
  /**
   * Retries of a connection that was never established (refused, unknown host), at most
   * `maxRetries`: nothing reached the server, so any request may be sent again, but a
   * server that is down should be reported fast. Default 2.
   */
  maxConnectRetries: number;
  /** Backoff unit of those retries (`connectDelayMs * 2^n` plus jitter). Default 100. */
  connectDelayMs: number;
}

/** Non-streaming requests: up to 5 attempts. */
export const DEFAULT_MAX_RETRIES = 4;
/** Streaming requests (retried only before the first event): up to 3 attempts. */
export const DEFAULT_STREAM_MAX_RETRIES = 2;

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: DEFAULT_MAX_RETRIES,
  initialDelayMs: 1000,
  maxDelayMs: 32_000,
  maxRetryAfterMs: 60_000,
  jitter: 0.25,
  maxConnectRetries: 2,
  connectDelayMs: 100,
};

/**
 * Named codes never retried, whatever the body's `retryable` or the headers say. Only
 * codes the status rules below would otherwise retry belong here: the weekly spending cap
 * is a 429. (`INSUFFICIENT_CREDIT`, `GC_ALLOWANCE_EXHAUSTED`, `NO_PLAN` and
 * `CONTENT_FILTERED` are 402 / 422: never retried as 4xx.)
 */
export const NEVER_RETRIED: ReadonlySet<string> = new Set<ErrorName>(['SPENDING_LIMIT_EXCEEDED']);

/** A 409 retried with backoff: the first request with this idempotency key is still running. */
const KEY_IN_USE: ErrorName = 'IDEMPOTENCY_KEY_IN_USE';

export type RetryDecision = { retry: true; delayMs: number; reason: string } | { retry: false; reason: string };

/** `2^n` backoff plus jitter for retry `n` (0-based). */
export function backoffDelay(retryIndex: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const base = Math.min(policy.initialDelayMs * 2 ** retryIndex, policy.maxDelayMs);
  return Math.round(base + base * policy.jitter * random());
}

export interface RetryContext {
  /** Retries already made for this request. */
  retriesDone: number;
  /**
   * Safe to send again after it may have reached the server: GET/HEAD/OPTIONS/PUT/DELETE,
   * or a request that carries an idempotency key, except a streaming request (the server
   * does not store streamed answers, so a key cannot replay one).
   */
  idempotent: boolean;
  random?: (() => number) | undefined;
}

/**
 * Decides one failed attempt (errors inside a started stream never get here):
 * - connection errors and timeouts: retried for idempotent requests only;
 * - connections never established (refused, unknown host): retried for any request, at
 *   most `maxConnectRetries` times after `connectDelayMs * 2^n`, so a server that is down
 *   is reported in well under a second; a failure the runtime gives no reason for (a
 *   browser's `TypeError: Failed to fetch`) likewise, for idempotent requests only;
 * - `x-should-retry: true|false` on an answer decides, except for SPENDING_LIMIT_EXCEEDED;
 * - never: the caller's abort, SPENDING_LIMIT_EXCEEDED (1005, a 429), and any 4xx other
 *   than 408, 429 and a 409 IDEMPOTENCY_KEY_IN_USE of an idempotent request;
 * - 408, 429, that 409 and 5xx: retried when `error.retryable` (the body's verdict, else
 *   the catalog's, else the status's);
 * - delay: `Retry-After` when present (seconds or HTTP date), else on a 429 with
 *   `X-RateLimit-Remaining: 0` the `X-RateLimit-Reset` seconds, else `2^n` backoff
 *   plus jitter.
 */
export function decideRetry(error: unknown, ctx: RetryContext, policy: RetryPolicy): RetryDecision {
  if (error instanceof APIUserAbortError) return { retry: false, reason: 'aborted by the caller' };
  if (ctx.retriesDone >= policy.maxRetries) return { retry: false, reason: `gave up after ${ctx.retriesDone + 1} attempts` };
  // Never connected: any request may be sent again. Perhaps never connected (no reason
  // given, as in browsers): an idempotent one may. Either way a server that is down should
  // be reported fast.
  if (error instanceof APIConnectionError && (error.connectFailed || (error.reasonUnknown && ctx.idempotent))) {
    const limit = Math.min(policy.maxRetries, policy.maxConnectRetries ?? DEFAULT_RETRY_POLICY.maxConnectRetries);
    if (ctx.retriesDone >= limit) return { retry: false, reason: `could not connect after ${ctx.retriesDone + 1} attempts` };
    const unit = policy.connectDelayMs ?? DEFAULT_RETRY_POLICY.connectDelayMs;
    return { retry: true, delayMs: backoffDelay(ctx.retriesDone, { ...policy, initialDelayMs: unit }, ctx.random), reason: `${error.name} (could not connect)` };
  }
  if (error instanceof APIConnectionError) {
    return ctx.idempotent
      ? { retry: true, delayMs: backoffDelay(ctx.retriesDone, policy, ctx.random), reason: error.name }
      : { retry: false, reason: `${error.name} on a request that is not idempotent` };
  }
  if (!(error instanceof APIError)) return { retry: false, reason: 'not an API error' };
  if (NEVER_RETRIED.has(error.name)) return { retry: false, reason: `${error.name} is never retried` };
  const { status } = error;
  // The server's own verdict, as openai-node honours it: `x-should-retry: true|false`.
  const shouldRetry = error.headers?.get('x-should-retry');
  if (shouldRetry === 'false') return { retry: false, reason: `${status} ${error.name}: x-should-retry: false` };
  const forced = shouldRetry === 'true';
  // The same key is still running: wait for it, then get its stored answer replayed.
  const keyInUse = status === 409 && error.name === KEY_IN_USE && ctx.idempotent;
  if (!forced && status !== 408 && status !== 429 && status < 500 && !keyInUse) return { retry: false, reason: `${status} ${error.name} is not retried` };
  if (!forced && !error.retryable) return { retry: false, reason: `${status} ${error.name} is not retryable` };

  const hinted =
    error.retryAfterMs ??
    (status === 429 && error.rateLimit?.remaining === 0 && error.rateLimit.resetSeconds !== undefined
      ? error.rateLimit.resetSeconds * 1000
      : undefined);
  if (hinted !== undefined) {
    if (hinted > policy.maxRetryAfterMs) return { retry: false, reason: `server asks to wait ${hinted} ms (> maxRetryAfterMs)` };
    return { retry: true, delayMs: hinted, reason: `${status} ${error.name}, server-given delay` };
  }
  return { retry: true, delayMs: backoffDelay(ctx.retriesDone, policy, ctx.random), reason: `${status} ${error.name}` };
}
