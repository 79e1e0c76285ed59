// The transport: sends one call's request (core/request.ts builds it). Every attempt gets
// fresh credentials, the call's idempotency key and a signal merging the caller's
// AbortSignal with the attempt's timeout; a failed attempt becomes a typed error and
// `decideRetry` (core/retry.ts) says whether and when to try again. A streamed answer is
// handed on unread, under its idle timeout (core/timeouts.ts).
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
  AuthenticationError,
  makeAPIError,
  PlatformError,
} from './errors.js';
import { IDEMPOTENCY_HEADER, IDEMPOTENT_METHODS } from './idempotency.js';
import { decideRetry, type RetryPolicy } from './retry.js';
import { IdleTimer, linkSignals, sleep, TimeoutReason } from './timeouts.js';

export type Fetch = (input: Request) => Promise<Response>;

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  error: unknown;
  reason: string;
}

/**
 * One call's HTTP request as plain values: no `Request` is built on the default path (the
 * global `fetch` is handed the URL and an init), since constructing one costs more than
 * the rest of the SDK's work on a call; an injected `fetch` gets a `Request` per attempt.
 */
export interface OutgoingRequest {
  method: string;
  url: string;
  /** Lower-case names. The transport adds the credential and the idempotency key per attempt. */
  headers: Record<string, string>;
  /** Serialized once, sent again as is by every attempt (a string, or form data that fetch encodes). */
  body: string | FormData | undefined;
}

export interface TransportConfig {
  /** An injected fetch, given a `Request`; undefined: the global `fetch`, given the URL and init (cheaper). */
  fetch: Fetch | undefined;
  /** Per attempt; for a stream, until the response headers arrive and then for each wait on the server for the next chunk. */
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
  /** The credential of an attempt (sent as a bearer token); read again for every attempt. */
  credential?: (() => string | undefined | Promise<string | undefined>) | undefined;
  /** After a 401 of the credential `sent`: true when a fresh one is worth one more try. */
  reauthorize?: ((sent: string | undefined) => boolean) | undefined;
  onRetry?: ((event: RetryEvent) => void) | undefined;
  random?: (() => number) | undefined;
}

/** What a call gets back from the transport. */
export interface Sent {
  response: Response;
  /** The body of a non-streaming success, read in full inside the timeout (the response's own body is used up). */
  body?: ArrayBuffer;
  /** The idle timeout of a streamed answer, running from the response headers on. */
  idle?: IdleTimer;
  /** Aborts the streaming request (the caller stopped reading). */
  abort?: (reason?: unknown) => void;
  /** Detaches the stream's signal from the caller's once the stream is over. */
  dispose?: () => void;
}

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The answer of a streaming call as a `Response` to read raw (`withResponse()`,
 * `asResponse()`): its body is the streamed answer's, under the same idle timeout. The
 * answer's body is locked only when this one is first read, so the stream object can still
 * be iterated when only the headers are looked at. `release` runs once the body is over
 * however it ends (read to the end, cancelled, failed or timed out).
 */
export function rawStreamResponse(response: Response, idle: IdleTimer, release: () => void): Response {
  const source = response.body;
  if (!source) return response;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const end = () => {
    idle.stop();
    release();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!reader) {
          reader = source.getReader();
          idle.onIdle = () => {
            controller.error(idle.error);
            reader!.cancel().catch(() => undefined);
          };
        }
        try {
          if (idle.error) throw idle.error;
          idle.waiting();
          const chunk = await reader.read();
          idle.received();
          if (idle.error) return; // the body already failed with the timeout
          if (chunk.done) {
            end();
            controller.close();
          } else {
            controller.enqueue(chunk.value);
          }
        } catch (error) {
          idle.received();
          end();
          controller.error(idle.error ?? error);
        }
      },
      cancel(reason) {
        end();
        return reader ? reader.cancel(reason) : source.cancel(reason);
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
  if (code !== undefined && CONNECT_FAILURES.has(code)) {
    const failure = new APIConnectionError(`Could not connect to ${url} (${code}): is the base URL right and the server up?`, { cause: error });
    failure.connectFailed = true;
    return failure;
  }
  // Node's fetch gives the reason as a code on the cause; a browser's fetch rejects with a
  // bare TypeError whatever went wrong.
  if (code === undefined && error instanceof TypeError) {
    const failure = new APIConnectionError(
      `Could not reach ${url} (${detail}): is the base URL right, the server up and, in a browser, this origin allowed by its CORS policy?`,
      { cause: error },
    );
    failure.reasonUnknown = true;
    return failure;
  }
  return new APIConnectionError(`Connection error on ${method} ${url}: ${detail}${code ? ` (${code})` : ''}`, { cause: error });
}

/** Sends a call's request, retrying as `decideRetry` says; rejects with the typed error. */
export async function send(request: OutgoingRequest, config: TransportConfig): Promise<Sent> {
  const { method, url, headers, body } = request;
  if (config.idempotencyKey && !(IDEMPOTENCY_HEADER in headers)) headers[IDEMPOTENCY_HEADER] = config.idempotencyKey;
  // A streamed answer is not stored by the server: its key cannot replay it, so a
  // streaming request is never sent again once it may have reached the server.
  const idempotent = !config.stream && (IDEMPOTENT_METHODS.has(method) || IDEMPOTENCY_HEADER in headers);
  // A caller-given Authorization header wins over the client's credentials.
  const credential = 'authorization' in headers ? undefined : config.credential;
  let retriesDone = 0;
  let reauthorized = false;

  for (;;) {
    if (config.signal?.aborted) throw new APIUserAbortError(undefined, { cause: config.signal.reason });
    const sent = credential ? await credential() : undefined;
    if (sent) headers.authorization = `Bearer ${sent}`;
    const linked = linkSignals(config.signal);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      linked.abort(new TimeoutReason(`no answer within ${config.timeoutMs} ms`));
    }, config.timeoutMs);
    let failure: unknown;
    try {
      // No `credentials` or `redirect` (edge runtimes reject them); `body` only when there is one.
      const init: RequestInit = body === undefined ? { method, headers, signal: linked.signal } : { method, headers, body, signal: linked.signal };
      const response = await (config.fetch ? config.fetch(new Request(url, init)) : globalThis.fetch(url, init));
      if (response.ok && config.stream) {
        clearTimeout(timer);
        const ms = config.timeoutMs;
        const idle = new IdleTimer(
          ms,
          (serverSide) =>
            new APIConnectionTimeoutError(
              serverSide
                ? `Stream idle timeout: the server sent nothing for ${ms} ms (${url}); the request was aborted.`
                : `Stream idle timeout: the stream was not read for ${ms} ms (the client side never started reading ${url}); the request was aborted.`,
            ),
          () => {
            linked.abort(new TimeoutReason(`stream idle for ${ms} ms`));
            linked.dispose();
            if (response.body && !response.body.locked) response.body.cancel().catch(() => undefined);
          },
        );
        const abort = (reason?: unknown) => {
          idle.stop();
          linked.abort(reason);
          linked.dispose();
        };
        return { response, idle, abort, dispose: linked.dispose };
      }
      // Read inside the timeout, so a body that never ends is a timeout too.
      const content = response.ok ? await response.arrayBuffer() : await response.text();
      clearTimeout(timer);
      linked.dispose();
      if (response.ok) return { response, body: content as ArrayBuffer };
      failure = makeAPIError({ status: response.status, body: parseBody(content as string), headers: response.headers });
    } catch (error) {
      clearTimeout(timer);
      linked.dispose();
      if (config.signal?.aborted) throw new APIUserAbortError(undefined, { cause: error });
      failure =
        error instanceof PlatformError
          ? error
          : timedOut
            ? new APIConnectionTimeoutError(`Request timed out: the server did not answer ${method} ${url} within ${config.timeoutMs} ms.`)
            : connectionError(error, method, url);
    }

    if (failure instanceof AuthenticationError && credential && !reauthorized && config.reauthorize?.(sent)) {
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
}
