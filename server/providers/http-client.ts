// HTTP transport shared by the upstream adapters: one keep-alive undici Pool per provider
// origin, per-call deadlines driven by CallContext, and the single place where transport
// failures and upstream HTTP error answers become ProviderErrors.
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'undici/types/header.js';
import { LinkedAbortController } from './linked-abort.js';
import { ProviderError, type CallContext, type ProviderErrorKind } from './types.js';

type TimeoutKind = NonNullable<ProviderError['details']['timeout']>;

/**
 * One call's cancellation: the caller's signal plus our own deadlines. Which deadline fired
 * is remembered so that the resulting abort error can be reported as the right timeout.
 */
export class CallGuard {
  readonly signal: AbortSignal;
  private readonly own: LinkedAbortController;
  private timer: NodeJS.Timeout | undefined;
  private fired: TimeoutKind | undefined;

  constructor(readonly ctx: CallContext) {
    this.own = new LinkedAbortController(ctx.signal);
    this.signal = this.own.signal;
  }

  arm(kind: TimeoutKind, ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.expire(kind), ms);
  }

  /** The deadline `kind` has passed: the call is aborted and its error reported as that timeout. */
  expire(kind: TimeoutKind): void {
    this.fired = kind;
    this.own.abort();
  }

  disarm(): void {
    clearTimeout(this.timer);
  }

  /** Ends the call early (consumer stopped reading): destroys the upstream socket. */
  cancel(): void {
    this.disarm();
    this.own.abort();
  }

  /** The call is over, however it ended: no deadline, and the caller's signal no longer followed. */
  end(): void {
    this.disarm();
    this.own.unlink();
  }

  /**
   * What to throw for an error raised by the transport. `phase` says whether response
   * headers had arrived: a socket lost before them means the upstream is unavailable,
   * after them it means the answer was cut.
   */
  classify(err: unknown, phase: 'headers' | 'body'): unknown {
    this.disarm();
    if (this.fired) return new ProviderError('timeout', `upstream ${this.fired} timeout`, { timeout: this.fired, cause: err });
    // The caller gave up: surface its own reason rather than an upstream failure.
    if (this.ctx.signal.aborted) return this.ctx.signal.reason;
    if (err instanceof ProviderError) return err;
    if (phase === 'body') return new ProviderError('connection_dropped', 'upstream connection closed mid-answer', { cause: err });
    const code = (err as { code?: string }).code;
    if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') {
      return new ProviderError('timeout', 'upstream connect timeout', { timeout: 'connect', cause: err });
    }
    return new ProviderError('unavailable', `upstream unreachable (${code ?? (err as Error).message})`, { cause: err });
  }
}

export interface UpstreamStream {
  /** The raw body; read it through readSse() with the same guard. */
  body: Readable;
  guard: CallGuard;
}

export interface JsonCall {
  method: 'GET' | 'POST';
  /** Path and query, appended to the client's base URL. */
  path: string;
  headers: Record<string, string>;
  body?: unknown;
}

export interface HttpClient {
  /** A call whose whole answer must arrive within `deadline`; returns the parsed 2xx JSON body. */
  json<T>(call: JsonCall, ctx: CallContext, deadline: { ms: number; kind: TimeoutKind }): Promise<T>;
  /** A streaming POST: resolves once 2xx headers arrive (within `timeouts.connectMs`). */
  stream(call: JsonCall, ctx: CallContext): Promise<UpstreamStream>;
  close(): Promise<void>;
}

export function createHttpClient(baseUrl: string): HttpClient {
  const url = new URL(baseUrl);
  const basePath = url.pathname.replace(/\/$/, '');
  // Deadlines are ours (CallGuard), so undici's own header/body timeouts are off.
  const pool = new Pool(url.origin, { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });

  const requestOptions = (call: JsonCall): Dispatcher.DispatchOptions => {
    const headers: Record<string, string> = { accept: 'application/json, text/event-stream', ...call.headers };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    return { method: call.method, path: basePath + call.path, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) };
  };

  /** A streaming call's answer: resolves with the body once 2xx headers arrive. */
  async function send(call: JsonCall, guard: CallGuard) {
    try {
      const res = await pool.request({ ...requestOptions(call), signal: guard.signal });
      if (res.statusCode >= 200 && res.statusCode < 300) return res;
      const text = await res.body.text();
      throw httpError(res.statusCode, res.headers, text);
    } catch (err) {
      throw guard.classify(err, 'headers');
    }
  }

  return {
    async json<T>(call: JsonCall, ctx: CallContext, deadline: { ms: number; kind: TimeoutKind }): Promise<T> {
      const guard = new CallGuard(ctx);
      guard.arm(deadline.kind, deadline.ms);
      const answer = new WholeAnswer(guard.signal);
      let text: string;
      try {
        text = await answer.read(pool, requestOptions(call));
      } catch (err) {
        throw guard.classify(err, answer.started ? 'body' : 'headers');
      } finally {
        guard.end();
      }
      if (answer.statusCode < 200 || answer.statusCode >= 300) throw httpError(answer.statusCode, answer.headers, text);
      try {
        return JSON.parse(text) as T;
      } catch (err) {
        throw new ProviderError('server', 'upstream answered with invalid JSON', { status: answer.statusCode, cause: err });
      }
    },

    async stream(call: JsonCall, ctx: CallContext): Promise<UpstreamStream> {
      const guard = new CallGuard(ctx);
      guard.arm('connect', ctx.timeouts.connectMs);
      // Ended by readSse once the body is read or left, or here if no answer came.
      const res = await send(call, guard).catch((err: unknown) => {
        guard.end();
        throw err;
      });
      guard.disarm();
      return { body: res.body, guard };
    },

    close: () => pool.close(),
  };
}

/**
 * One whole answer read through undici's dispatcher interface: the chunks are kept as they
 * come. request() would make a body stream and an async resource per call, and text() a
 * consumer with its own promise, none of which a small JSON answer needs.
 */
class WholeAnswer implements Dispatcher.DispatchHandler {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  /** The response headers arrived: a failure from here on cut the answer. */
  started = false;
  private resolve!: (text: string) => void;
  private reject!: (error: unknown) => void;
  private readonly chunks: Buffer[] = [];
  private controller: Dispatcher.DispatchController | undefined;
  // An abort before the request reaches a socket settles at once; the request is dropped when it does.
  private readonly onAbort = () => {
    if (this.controller) this.controller.abort(this.signal.reason);
    else this.reject(this.signal.reason);
  };

  constructor(private readonly signal: AbortSignal) {}

  /** Sends the request; resolves with the whole body as text, whatever the status. */
  read(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions): Promise<string> {
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      if (this.signal.aborted) return reject(this.signal.reason);
      this.signal.addEventListener('abort', this.onAbort, { once: true });
      try {
        dispatcher.dispatch(options, this);
      } catch (error) {
        this.signal.removeEventListener('abort', this.onAbort);
        reject(error);
      }
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.signal.aborted) return controller.abort(this.signal.reason);
    this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.statusCode = statusCode;
    this.headers = headers;
    this.started = true;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.signal.removeEventListener('abort', this.onAbort);
    this.resolve(this.chunks.length === 1 ? this.chunks[0].toString('utf8') : Buffer.concat(this.chunks).toString('utf8'));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.signal.removeEventListener('abort', this.onAbort);
    this.reject(error);
  }
}

/** Upstream Retry-After in ms: `retry-after-ms` (OpenAI), else seconds or an HTTP date. */
export function parseRetryAfter(headers: IncomingHttpHeaders): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = header(headers, 'retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The error object of an OpenAI (`{error:{message,type,code}}`) or Anthropic (`{type:'error',error:{type,message}}`) body. */
interface UpstreamErrorObject {
  message?: unknown;
  type?: unknown;
  code?: unknown;
  innererror?: { code?: unknown };
}

const CONTEXT_LENGTH = /context[_ ]length|context window|prompt is too long|maximum context|too many tokens/i;
const CONTENT_FILTER = new Set(['content_filter', 'content_policy_violation', 'ResponsibleAIPolicyViolation']);

/** Maps an upstream HTTP error answer to a ProviderError. */
export function httpError(status: number, headers: IncomingHttpHeaders, bodyText: string): ProviderError {
  const error = errorObject(bodyText);
  const message = typeof error?.message === 'string' ? error.message : bodyText.slice(0, 200) || `HTTP ${status}`;
  const details = { status, retryAfterMs: status === 429 || status === 503 ? parseRetryAfter(headers) : undefined };
  return new ProviderError(statusKind(status, error, message), `upstream ${status}: ${message}`, details);
}

function statusKind(status: number, error: UpstreamErrorObject | undefined, message: string): ProviderErrorKind {
  if (status === 429) return 'rate_limit';
  if (status === 401 || status === 403) return 'auth';
  if (status === 408 || status === 504) return 'timeout';
  if (status === 503 || status === 529) return 'unavailable';
  if (status >= 500) return 'server';
  if (status === 400 || status === 413 || status === 422) {
    if (error?.code === 'context_length_exceeded' || CONTEXT_LENGTH.test(message)) return 'context_length';
    if (isContentFilter(error)) return 'content_filter';
  }
  return 'bad_request';
}

function isContentFilter(error: UpstreamErrorObject | undefined): boolean {
  return (
    CONTENT_FILTER.has(String(error?.code)) ||
    CONTENT_FILTER.has(String(error?.innererror?.code)) ||
    // Anthropic's only signal is the message.
    /content filtering policy/i.test(String(error?.message))
  );
}

/** Maps an error reported inside a stream (no HTTP status) by its type/code. */
export function streamError(error: unknown): ProviderError {
  const e = (typeof error === 'object' && error !== null ? error : {}) as UpstreamErrorObject;
  const message = typeof e.message === 'string' ? e.message : 'upstream stream error';
  const tag = `${String(e.type)} ${String(e.code)}`;
  let kind: ProviderErrorKind = 'server';
  if (/rate_limit/.test(tag)) kind = 'rate_limit';
  else if (/overloaded|unavailable/.test(tag)) kind = 'unavailable';
  else if (/authentication|permission|invalid_api_key/.test(tag)) kind = 'auth';
  else if (e.code === 'context_length_exceeded' || CONTEXT_LENGTH.test(message)) kind = 'context_length';
  else if (isContentFilter(e)) kind = 'content_filter';
  else if (/timeout/.test(tag)) kind = 'timeout';
  else if (/invalid_request/.test(tag)) kind = 'bad_request';
  return new ProviderError(kind, `upstream stream error: ${message}`);
}

function errorObject(bodyText: string): UpstreamErrorObject | undefined {
  try {
    const body = JSON.parse(bodyText) as { error?: unknown };
    return typeof body.error === 'object' && body.error !== null ? (body.error as UpstreamErrorObject) : undefined;
  } catch {
    return undefined;
  }
}
