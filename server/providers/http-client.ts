// HTTP transport shared by the upstream adapters: one keep-alive undici Pool per provider
// origin, per-call deadlines driven by CallContext, and the single place where transport
// failures and upstream HTTP error answers become ProviderErrors.
import { Pool, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'undici/types/header.js';
import { Redactor } from './redact.js';
import { ProviderError, type CallContext, type ProviderErrorKind } from './types.js';

type TimeoutKind = NonNullable<ProviderError['details']['timeout']>;

/** Redacts what looks like a credential, for a client that knows no key of its own. */
const CREDENTIAL_SHAPES = new Redactor();

/** What a call's abort reaches: the transport of its answer. */
interface Abortable {
  abort(reason: Error): void;
}

/**
 * One call's cancellation: the caller's signal plus our own deadlines. Which deadline fired
 * is remembered so that the resulting abort error can be reported as the right timeout.
 * Not an AbortController of its own: on Node 20 making one (its signal an EventTarget) costs
 * more than the rest of the guard, and only the call's own transport ever listens.
 */
export class CallGuard {
  private timer: NodeJS.Timeout | undefined;
  private fired: TimeoutKind | undefined;
  private target: Abortable | undefined;
  private reason: Error | undefined;
  private readonly follow = () => this.abort(this.ctx.signal.reason);

  constructor(readonly ctx: CallContext) {
    if (ctx.signal.aborted) this.abort(ctx.signal.reason);
    else ctx.signal.addEventListener('abort', this.follow, { once: true });
  }

  /** The transport the call's abort reaches; an abort already decided reaches it at once. */
  attach(target: Abortable): void {
    this.target = target;
    if (this.reason) target.abort(this.reason);
  }

  arm(kind: TimeoutKind, ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.expire(kind), ms);
  }

  /** The deadline `kind` has passed: the call is aborted and its error reported as that timeout. */
  expire(kind: TimeoutKind): void {
    this.fired = kind;
    this.abort(new DOMException(`upstream ${kind} timeout`, 'AbortError'));
  }

  disarm(): void {
    clearTimeout(this.timer);
  }

  /** Ends the call early (consumer stopped reading): destroys the upstream socket. */
  cancel(): void {
    this.disarm();
    this.abort(new DOMException('This operation was aborted', 'AbortError'));
  }

  /** The call is over, however it ended: no deadline, and the caller's signal no longer followed. */
  end(): void {
    this.disarm();
    this.ctx.signal.removeEventListener('abort', this.follow);
  }

  private abort(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    this.ctx.signal.removeEventListener('abort', this.follow);
    this.target?.abort(reason);
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
  /** The body as it arrives; read it through readSse() with the same guard. */
  body: UpstreamResponse;
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
  /** Takes credentials out of upstream error text (its error answers already are): for errors reported inside a stream. */
  readonly redact: Redactor;
  close(): Promise<void>;
}

/** `redact`: the provider's credentials, kept out of the errors its upstream answers with. */
export function createHttpClient(baseUrl: string, redact = CREDENTIAL_SHAPES): HttpClient {
  const url = new URL(baseUrl);
  const basePath = url.pathname.replace(/\/$/, '');
  // Deadlines are ours (CallGuard), so undici's own header/body timeouts are off.
  const pool = new Pool(url.origin, { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });

  const requestOptions = (call: JsonCall): Dispatcher.DispatchOptions => {
    const headers: Record<string, string> = { accept: 'application/json, text/event-stream', ...call.headers };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    return { method: call.method, path: basePath + call.path, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) };
  };

  /** The call's answer: its headers once 2xx (a stream), else its whole body; a transport failure is classified. */
  async function send(call: JsonCall, guard: CallGuard, until: 'headers' | 'end'): Promise<UpstreamResponse> {
    const res = new UpstreamResponse();
    guard.attach(res);
    try {
      await res.open(pool, requestOptions(call), until);
    } catch (err) {
      throw guard.classify(err, res.started ? 'body' : 'headers');
    }
    if (res.statusCode < 200 || res.statusCode >= 300) throw httpError(res.statusCode, res.headers, res.text(), redact);
    return res;
  }

  return {
    async json<T>(call: JsonCall, ctx: CallContext, deadline: { ms: number; kind: TimeoutKind }): Promise<T> {
      const guard = new CallGuard(ctx);
      guard.arm(deadline.kind, deadline.ms);
      let res: UpstreamResponse;
      try {
        res = await send(call, guard, 'end');
      } finally {
        guard.end();
      }
      try {
        return JSON.parse(res.text()) as T;
      } catch (err) {
        throw new ProviderError('server', 'upstream answered with invalid JSON', { status: res.statusCode, cause: err });
      }
    },

    async stream(call: JsonCall, ctx: CallContext): Promise<UpstreamStream> {
      const guard = new CallGuard(ctx);
      guard.arm('connect', ctx.timeouts.connectMs);
      // Ended by readSse once the body is read or left, or here if no answer came.
      const body = await send(call, guard, 'headers').catch((err: unknown) => {
        guard.end();
        throw err;
      });
      guard.disarm();
      return { body, guard };
    },

    redact,
    close: () => pool.close(),
  };
}

/** Buffered body bytes past which undici is asked to pause the socket until the reader catches up. */
const PAUSE_AT_BYTES = 64 * 1024;

/**
 * One upstream answer, read through undici's dispatcher interface: the body's chunks are
 * kept as they arrive and taken by the reader, with no body stream, async resource or
 * promise per chunk (request() would make them all). A whole answer is read to its end; a
 * stream is handed over at its headers and read chunk by chunk (readSse), the socket
 * paused while too much waits unread.
 */
export class UpstreamResponse implements Dispatcher.DispatchHandler {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  /** The body ended, or failed (`error`): nothing more will arrive. */
  ended = false;
  error: unknown;
  /** Called when a chunk arrives or the body ends, once the answer is open. */
  onActivity: (() => void) | undefined;
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private discarding = false;
  private until: 'headers' | 'end' = 'end';
  private settle: ((error?: unknown) => void) | undefined;
  private controller: Dispatcher.DispatchController | undefined;
  // Set by an abort before the request reached a socket: open() fails with it, and a request
  // already queued is dropped when it reaches one.
  private abortedWith: Error | undefined;

  /** Cancels the request or the answer; one not under way yet fails at once, or as it opens. */
  abort(reason: Error): void {
    if (this.ended) return;
    if (this.controller) return this.controller.abort(reason);
    this.abortedWith = reason;
    if (this.settle) this.end(reason);
  }

  /** The response headers arrived: a failure from here on cut the answer. */
  get started(): boolean {
    return this.statusCode !== 0;
  }

  /** Sends the request; resolves at the 2xx headers (`until: 'headers'`) or once the whole body arrived. */
  open(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, until: 'headers' | 'end'): Promise<void> {
    this.until = until;
    return new Promise((resolve, reject) => {
      this.settle = (error) => {
        this.settle = undefined;
        if (error === undefined) resolve();
        else reject(error);
      };
      if (this.abortedWith) return this.end(this.abortedWith);
      try {
        dispatcher.dispatch(options, this);
      } catch (error) {
        this.end(error);
      }
    });
  }

  /** The next unread chunk, or null when none has arrived. */
  read(): Buffer | null {
    const chunk = this.chunks.shift();
    if (chunk === undefined) return null;
    this.buffered -= chunk.length;
    if (this.controller?.paused && this.buffered < PAUSE_AT_BYTES) this.controller.resume();
    return chunk;
  }

  /** The whole body as text (an answer read to its end). */
  text(): string {
    return this.chunks.length === 1 ? this.chunks[0].toString('utf8') : Buffer.concat(this.chunks).toString('utf8');
  }

  /** What is unread and what still comes is dropped; the body is read to its end, so the connection can be reused. */
  discard(): void {
    this.discarding = true;
    this.chunks.length = 0;
    this.buffered = 0;
    if (this.controller?.paused) this.controller.resume();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.abortedWith) return controller.abort(this.abortedWith);
    this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // An informational answer (103 Early Hints) is not the answer: its headers come later.
    if (statusCode < 200) return;
    this.statusCode = statusCode;
    this.headers = headers;
    if (this.until === 'headers' && statusCode >= 200 && statusCode < 300) this.settle?.();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.discarding) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.settle === undefined && this.buffered >= PAUSE_AT_BYTES) controller.pause();
    this.onActivity?.();
  }

  onResponseEnd(): void {
    this.end(undefined);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.end(error);
  }

  private end(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.settle?.(error);
    this.onActivity?.();
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

/** Maps an upstream HTTP error answer to a ProviderError, its text redacted. */
export function httpError(status: number, headers: IncomingHttpHeaders, bodyText: string, redact = CREDENTIAL_SHAPES): ProviderError {
  const error = errorObject(bodyText);
  // Redacted before it is cut: a cut could leave part of a key unrecognised.
  const message = (typeof error?.message === 'string' ? redact.text(error.message) : redact.text(bodyText).slice(0, 200)) || `HTTP ${status}`;
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

/** Maps an error reported inside a stream (no HTTP status) by its type/code, its text redacted. */
export function streamError(error: unknown, redact = CREDENTIAL_SHAPES): ProviderError {
  const e = (typeof error === 'object' && error !== null ? error : {}) as UpstreamErrorObject;
  const message = redact.text(typeof e.message === 'string' ? e.message : 'upstream stream error');
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
