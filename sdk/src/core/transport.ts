// The transport: a `fetch` built for one call and handed to the generated client. Every
// attempt gets fresh credentials, the call's idempotency key and a signal merging the
// caller's AbortSignal with the attempt's timeout; a failed attempt becomes a typed error
// and `decideRetry` (core/retry.ts) says whether and when to try again.
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
  AuthenticationError,
  makeAPIError,
  PlatformError,
} from './errors.js';
import { IDEMPOTENCY_HEADER, isIdempotent } from './idempotency.js';
import { decideRetry, type RetryPolicy } from './retry.js';
import { linkSignals, sleep, TimeoutReason, type LinkedSignal } from './timeouts.js';

export type Fetch = (input: Request) => Promise<Response>;

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  error: unknown;
  reason: string;
}

export interface TransportConfig {
  /** An injected fetch, given a `Request`; undefined: the global `fetch`, given the URL and init (cheaper). */
  fetch: Fetch | undefined;
  /** Per attempt; for a stream, until the response headers arrive and then for each gap between chunks. */
  timeoutMs: number;
  policy: RetryPolicy;
  /** The caller's signal. */
  signal?: AbortSignal | undefined;
  /** Sent on the call's every attempt (POSTs); makes a non-streaming request idempotent. */
  idempotencyKey?: string | undefined;
  /**
   * The answer is an SSE stream: return it unread and keep its signal alive. Such a request
   * is never idempotent (the server does not store streamed answers): it is not sent again
   * once it may have reached the server, only after a status answered before the stream.
   */
  stream: boolean;
  /** Sets the credential on an attempt's headers; returns the credential it set. */
  authorize?: ((headers: Headers) => Promise<string | undefined>) | undefined;
  /** After a 401 of the credential `sent`: true when a fresh one is worth one more try. */
  reauthorize?: ((sent: string | undefined) => boolean) | undefined;
  onRetry?: ((event: RetryEvent) => void) | undefined;
  random?: (() => number) | undefined;
}

/** What the call learns from the transport, read after the generated client returns. */
export interface CallState {
  response?: Response;
  /** The body of a non-streaming success, read in full (the `response`'s own body is used up). */
  body?: ArrayBuffer;
  /** Aborts the streaming request (the caller stopped reading). */
  abort?: (reason?: unknown) => void;
  /** Detaches the stream's signal from the caller's once the stream is over. */
  dispose?: () => void;
}

/**
 * The serialized body of a request the generated client built (its request interceptor
 * records it), so the transport need not read the body back out of the `Request`.
 */
export const serializedBodies = new WeakMap<Request, string>();

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The stream's body with an idle timeout: when no chunk arrives within `ms` (counted from
 * the headers, then from each chunk handed to the reader), the body fails with
 * `APIConnectionTimeoutError` and the request is aborted, which also releases a stream
 * nobody reads. `release` runs once, when the body is over however it ends (read to the
 * end, cancelled, failed, timed out, or its request aborted).
 */
function withIdleTimeout(response: Response, ms: number, request: LinkedSignal, release: () => void, url: string): Response {
  const source = response.body;
  if (!source) {
    release();
    return response;
  }
  const reader = source.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let released = false;
  let timedOut = false;
  // A read is waiting on the server: when the timer fires then, the server went quiet;
  // otherwise the caller stopped reading.
  let pulling = false;
  const done = () => {
    clearTimeout(timer);
    if (released) return;
    released = true;
    release();
  };
  request.signal.addEventListener('abort', done, { once: true });
  const arm = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (released) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      controller.error(
        new APIConnectionTimeoutError(
          pulling
            ? `Stream idle timeout: the server sent nothing for ${ms} ms (${url}); the request was aborted.`
            : `Stream idle timeout: the stream was not read for ${ms} ms (the client side stopped reading ${url}); the request was aborted.`,
        ),
      );
      request.abort(new TimeoutReason(`stream idle for ${ms} ms`));
      reader.cancel().catch(() => undefined);
      done();
    }, ms);
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start: arm,
      async pull(controller) {
        try {
          pulling = true;
          const chunk = await reader.read();
          pulling = false;
          if (timedOut) return; // already failed with the timeout
          if (chunk.done) {
            done();
            controller.close();
          } else {
            arm(controller);
            controller.enqueue(chunk.value);
          }
        } catch (error) {
          pulling = false;
          done();
          if (!timedOut) controller.error(error);
        }
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const copy = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperties(copy, { url: { value: response.url }, redirected: { value: response.redirected } });
  return copy;
}

/** Error codes of a connection that was never established (nothing reached the server). */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** A fetch failure as `APIConnectionError`, naming the URL and, when known, the cause's code. */
function connectionError(error: unknown, method: string, url: string): APIConnectionError {
  const code = errorCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  const connect = code !== undefined && CONNECT_FAILURES.has(code);
  const failure = new APIConnectionError(
    connect
      ? `Could not connect to ${url} (${code}): is the base URL right and the server up?`
      : `Connection error on ${method} ${url}: ${detail}${code ? ` (${code})` : ''}`,
    { cause: error },
  );
  if (connect) failure.connectFailed = true;
  return failure;
}

export function createTransport(config: TransportConfig, state: CallState): (input: RequestInfo | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const original = input instanceof Request && !init ? input : new Request(input, init);
    // Buffered once so that every attempt can send it again.
    const serialized = serializedBodies.get(original);
    const body = serialized ?? (original.body ? await original.arrayBuffer() : undefined);
    const headers = new Headers(original.headers);
    if (config.idempotencyKey && !headers.has(IDEMPOTENCY_HEADER)) headers.set(IDEMPOTENCY_HEADER, config.idempotencyKey);
    // A streamed answer is not stored by the server: its key cannot replay it, so a
    // streaming request is never sent again once it may have reached the server.
    const idempotent = !config.stream && isIdempotent(original.method, headers);
    // A caller-given Authorization header wins over the client's credentials.
    const authorize = headers.has('authorization') ? undefined : config.authorize;
    let retriesDone = 0;
    let reauthorized = false;

    for (;;) {
      if (config.signal?.aborted) throw new APIUserAbortError(undefined, { cause: config.signal.reason });
      const sent = await authorize?.(headers);
      const linked = linkSignals(config.signal);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        linked.abort(new TimeoutReason(`no answer within ${config.timeoutMs} ms`));
      }, config.timeoutMs);
      let failure: unknown;
      try {
        // No `credentials` (edge runtimes reject it), and `redirect` only when not the default.
        const attempt: RequestInit = {
          method: original.method,
          headers,
          body: body ?? null,
          ...(original.redirect !== 'follow' ? { redirect: original.redirect } : {}),
          signal: linked.signal,
        };
        const response = await (config.fetch ? config.fetch(new Request(original.url, attempt)) : globalThis.fetch(original.url, attempt));
        if (response.ok && config.stream) {
          clearTimeout(timer);
          const streamed = withIdleTimeout(response, config.timeoutMs, linked, linked.dispose, original.url);
          state.response = streamed;
          state.abort = linked.abort;
          state.dispose = linked.dispose;
          return streamed;
        }
        // Read inside the timeout, so a body that never ends is a timeout too.
        const content = response.ok ? await response.arrayBuffer() : await response.text();
        clearTimeout(timer);
        linked.dispose();
        if (response.ok) {
          // The call parses `state.body` itself (core/body.ts); the generated client is asked
          // for no parsing (`parseAs: 'stream'`), so the used-up response is all it needs.
          state.response = response;
          state.body = content as ArrayBuffer;
          return response;
        }
        failure = makeAPIError({ status: response.status, body: parseBody(content as string), headers: response.headers });
      } catch (error) {
        clearTimeout(timer);
        linked.dispose();
        if (config.signal?.aborted) throw new APIUserAbortError(undefined, { cause: error });
        failure =
          error instanceof PlatformError
            ? error
            : timedOut
              ? new APIConnectionTimeoutError(
                  `Request timed out: the server did not answer ${original.method} ${original.url} within ${config.timeoutMs} ms.`,
                )
              : connectionError(error, original.method, original.url);
      }

      if (failure instanceof AuthenticationError && authorize && !reauthorized && config.reauthorize?.(sent)) {
        reauthorized = true;
        continue;
      }
      const decision = decideRetry(failure, { retriesDone, idempotent, random: config.random }, config.policy);
      if (!decision.retry) {
        if (failure instanceof APIConnectionError && retriesDone > 0) failure.message += ` (gave up after ${retriesDone + 1} attempts)`;
        throw failure;
      }
      config.onRetry?.({ attempt: retriesDone + 1, delayMs: decision.delayMs, error: failure, reason: decision.reason });
      try {
        await sleep(decision.delayMs, config.signal);
      } catch (reason) {
        throw new APIUserAbortError(undefined, { cause: reason });
      }
      retriesDone += 1;
    }
  };
}
