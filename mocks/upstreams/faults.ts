// Shared machinery of the fake upstreams (fake-openai.ts, fake-anthropic.ts): a real HTTP
// server on 127.0.0.1 that records every request, a fault queue, and the code that plays
// faults and SSE streams the same way for both wire formats. Each fake only supplies its
// dialect: routes, answer frames and error bodies.
//
//   const up = await startFakeOpenAI({ answer: 'Hi there', chunkIntervalMs: 30 });
//   up.faults.push({ type: 'rate_limit', retryAfter: '2' });   // next call only
//   up.faults.always({ type: 'unavailable' });                 // every call until clear()
//   up.requests[0].body; await up.requests[0].closed;          // what was sent / socket closed
import { once } from 'node:events';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export type Fault =
  /** 429, with a Retry-After header when given (seconds or HTTP date). */
  | { type: 'rate_limit'; retryAfter?: string }
  /** 500. */
  | { type: 'server_error' }
  /** 503 (or 529, Anthropic's "overloaded"). */
  | { type: 'unavailable'; status?: 503 | 529 }
  /**
   * 401 with the upstream's invalid-key body; `echoKey`: its message quotes the key the
   * request presented, in full ("Incorrect API key provided: Bearer sk-…").
   */
  | { type: 'bad_key'; echoKey?: boolean }
  /** 400 with the upstream's real context-length error body. */
  | { type: 'context_length' }
  /** 400 with the upstream's content-filter error body. */
  | { type: 'content_filter' }
  /** 400 with the upstream's invalid-request error body (a parameter it rejects), its message `message` when given. */
  | { type: 'bad_request'; message?: string }
  /** A normal answer that ends with finish_reason content_filter (Anthropic: stop_reason refusal). */
  | { type: 'content_filter_finish' }
  /** 400 when the last message is an assistant message (an upstream that cannot continue a prefix). */
  | { type: 'refuse_prefix' }
  /** Destroy the socket before sending headers. */
  | { type: 'reset' }
  /** Never answer; the socket stays open until the client gives up. */
  | { type: 'hang' }
  /** Send headers, then wait `ms` before the first chunk (or the whole non-stream answer). */
  | { type: 'slow_first_token'; ms: number }
  /** Destroy the socket after `afterChunks` stream frames. */
  | { type: 'cut'; afterChunks: number }
  /** Stop sending after `afterChunks` frames, keeping the socket open (and pinging every `pingEveryMs` when set). */
  | { type: 'stall'; afterChunks: number; pingEveryMs?: number }
  /**
   * The stream's opening events (OpenAI-compatible: a role-only chunk, as vLLM sends at
   * once; Anthropic: message_start and content_block_start), then only pings every
   * `pingEveryMs` (a keep-alive comment; Anthropic's ping event), never a token.
   */
  | { type: 'no_tokens'; pingEveryMs: number }
  /** Send a frame that is not JSON after `afterChunks` frames. */
  | { type: 'malformed'; afterChunks: number }
  /** End the stream cleanly but without its terminator ([DONE] / message_stop). */
  | { type: 'no_done' }
  /** An in-stream error event after `afterChunks` frames (default 1), then end; `echoKey` as for bad_key. */
  | { type: 'stream_error'; error: StreamErrorKind; afterChunks?: number; echoKey?: boolean };

export type StreamErrorKind = 'rate_limit' | 'overloaded' | 'server' | 'auth' | 'bad_request';
export type ErrorKind = 'rate_limit' | 'server' | 'unavailable' | 'auth' | 'context_length' | 'content_filter' | 'bad_request' | 'prefix';

/** Faults pushed apply to one call each, in order; an `always` fault applies once the queue is empty. */
export class FaultQueue {
  private readonly queue: Fault[] = [];
  private standing: Fault | undefined;

  push(...faults: Fault[]): void {
    this.queue.push(...faults);
  }

  always(fault: Fault): void {
    this.standing = fault;
  }

  clear(): void {
    this.queue.length = 0;
    this.standing = undefined;
  }

  next(): Fault | undefined {
    return this.queue.shift() ?? this.standing;
  }
}

export interface RecordedRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The client's port: equal across requests means a reused keep-alive connection. */
  remotePort: number;
  /** Parsed JSON body (undefined when there was none). */
  body: any;
  /** Resolves when the response's socket is done with, finished or not. */
  closed: Promise<void>;
  /** Whether the full response was sent before the connection closed. */
  completed: boolean;
  /**
   * When a stream's first frame was written (`process.hrtime.bigint()`, ns): a clock every
   * process of the machine shares, so a client can time what it receives against it.
   */
  firstFrameAt?: bigint;
}

export interface FakeConfig {
  /** Answer text; by default a sentence naming the upstream model. */
  answer: string | ((model: string) => string);
  /** Pause between two stream frames (0: as fast as possible). */
  chunkIntervalMs: number;
  /** When set, requests without this key are refused with 401. */
  apiKey?: string;
  /** Answers without `usage` (chat, streams, embeddings), as some compatible upstreams do. */
  omitUsage?: boolean;
  /** Stream pieces keep the space after each word ("The ", "quick ") instead of before it. */
  spaceAfterWords?: boolean;
  /** The model refuses: the answer text comes as `refusal` (OpenAI's structured refusal), content null. */
  refuse?: boolean;
  /** Asked in a user turn to continue a quoted part of its answer, it first repeats this many of the quote's last words (as models often do). */
  repeatWords?: number;
  /**
   * OpenAI-compatible: automatic prompt caching, as OpenAI's: a request whose messages before
   * the last one (with the same `prompt_cache_key`) were seen before reports their tokens as
   * `prompt_tokens_details.cached_tokens`. (Anthropic's fake always honours `cache_control`.)
   */
  promptCaching?: boolean;
}

export interface FakeUpstream {
  url: string;
  requests: RecordedRequest[];
  faults: FaultQueue;
  /** Mutable: changes apply to the next request. */
  config: FakeConfig;
  /** The prompt prefixes the fake has cached (prompt caching); clear() empties the cache. */
  promptCache: Set<string>;
  close(): Promise<void>;
}

/** What a fake needs to know about its own wire format. */
export interface Dialect {
  /** The upstream's JSON error body; `message` may be empty to use the dialect's real one. */
  errorBody(kind: ErrorKind, message: string): unknown;
  /** A complete SSE frame carrying an in-stream error; `message` may be empty to use the dialect's real one. */
  errorFrame(kind: StreamErrorKind, message: string): string;
  malformedFrame: string;
  /** A keep-alive: a comment, or the dialect's ping event. */
  pingFrame: string;
  /** How many of a stream's first frames open it without carrying a token. */
  openingFrames: number;
  /** The key the request presented, from the dialect's auth header. */
  apiKey(headers: IncomingHttpHeaders): string | undefined;
}

export interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  recorded: RecordedRequest;
  fault: Fault | undefined;
  config: FakeConfig;
  promptCache: Set<string>;
}

export async function startUpstream(dialect: Dialect, route: (call: Call) => Promise<void> | void, config: Partial<FakeConfig> = {}): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const faults = new FaultQueue();
  const promptCache = new Set<string>();
  const fullConfig: FakeConfig = { answer: (model) => `This is a fake answer from ${model}.`, chunkIntervalMs: 0, ...config };

  const server = http.createServer(async (req, res) => {
    const raw = Buffer.concat(await req.toArray()).toString('utf8');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      remotePort: req.socket.remotePort ?? 0,
      body: raw ? safeJson(raw) : undefined,
      closed: once(res, 'close').then(() => undefined),
      completed: false,
    };
    res.once('finish', () => (recorded.completed = true));
    requests.push(recorded);
    const call: Call = { req, res, recorded, fault: faults.next(), config: fullConfig, promptCache };
    try {
      if (fullConfig.apiKey !== undefined && dialect.apiKey(req.headers) !== fullConfig.apiKey) {
        sendError(res, dialect, 'auth', 401, 'Invalid API key');
      } else if (!playHttpFault(call, dialect)) {
        await route(call);
      }
    } catch (err) {
      if (!res.headersSent) sendError(res, dialect, 'server', 500, String(err));
      else res.destroy();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    config: fullConfig,
    promptCache,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, dialect: Dialect, kind: ErrorKind, status: number, message: string, headers?: Record<string, string>): void {
  sendJson(res, status, dialect.errorBody(kind, message), headers);
}

/** Plays the faults that happen instead of an answer; returns whether one did. */
function playHttpFault({ fault, res, recorded }: Call, dialect: Dialect): boolean {
  switch (fault?.type) {
    case 'rate_limit':
      sendError(res, dialect, 'rate_limit', 429, 'Rate limit reached', fault.retryAfter ? { 'retry-after': fault.retryAfter } : {});
      return true;
    case 'server_error':
      sendError(res, dialect, 'server', 500, 'The server had an error while processing your request');
      return true;
    case 'unavailable':
      sendError(res, dialect, 'unavailable', fault.status ?? 503, 'The service is temporarily overloaded');
      return true;
    case 'bad_key':
      sendError(res, dialect, 'auth', 401, fault.echoKey ? echoedKey(dialect, recorded) : 'Invalid API key provided');
      return true;
    case 'context_length':
      sendError(res, dialect, 'context_length', 400, '');
      return true;
    case 'content_filter':
      sendError(res, dialect, 'content_filter', 400, '');
      return true;
    case 'bad_request':
      sendError(res, dialect, 'bad_request', 400, fault.message ?? '');
      return true;
    case 'refuse_prefix': {
      const messages = (recorded.body as { messages?: { role?: string }[] } | undefined)?.messages;
      if (messages?.at(-1)?.role !== 'assistant') return false;
      sendError(res, dialect, 'prefix', 400, 'The final message must be a user message');
      return true;
    }
    case 'reset':
      res.socket?.destroy();
      return true;
    case 'hang':
      return true;
    default:
      return false;
  }
}

/** An error message quoting the key the request presented, as some upstreams write it. */
function echoedKey(dialect: Dialect, recorded: RecordedRequest): string {
  return `Incorrect API key provided: Bearer ${dialect.apiKey(recorded.headers) ?? ''}`;
}

/** Delay before the answer starts (slow_first_token), for plain and streamed answers. */
export async function firstTokenDelay(fault: Fault | undefined): Promise<void> {
  if (fault?.type === 'slow_first_token') await sleep(fault.ms);
}

/**
 * Streams `frames` (complete SSE frames) then `terminator`, applying the stream faults.
 * Stops quietly if the client goes away.
 */
export async function writeSse(call: Call, dialect: Dialect, frames: string[], terminator: string[]): Promise<void> {
  const { res, fault, config } = call;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
  let gone = false;
  res.once('close', () => (gone = true));
  const pings = async (everyMs: number) => {
    while (!gone) {
      await sleep(everyMs);
      if (!gone) res.write(dialect.pingFrame);
    }
  };
  if (fault?.type === 'no_tokens') {
    call.recorded.firstFrameAt = process.hrtime.bigint();
    res.write(frames.slice(0, dialect.openingFrames).join(''));
    return pings(fault.pingEveryMs);
  }
  await firstTokenDelay(fault);
  const all = fault?.type === 'no_done' ? frames : [...frames, ...terminator];
  const midStream = fault?.type === 'cut' || fault?.type === 'stall' || fault?.type === 'malformed' || fault?.type === 'stream_error' ? fault : undefined;
  for (let i = 0; i <= all.length; i++) {
    if (gone) return;
    if (midStream && i === (midStream.afterChunks ?? 1)) {
      if (midStream.type === 'cut') return void res.destroy();
      if (midStream.type === 'stall') return midStream.pingEveryMs ? pings(midStream.pingEveryMs) : undefined;
      if (midStream.type === 'malformed') res.write(dialect.malformedFrame);
      if (midStream.type === 'stream_error') return void res.end(dialect.errorFrame(midStream.error, midStream.echoKey ? echoedKey(dialect, call.recorded) : ''));
    }
    if (i === all.length) break;
    if (i > 0 && config.chunkIntervalMs > 0) await sleep(config.chunkIntervalMs);
    if (i === 0) call.recorded.firstFrameAt = process.hrtime.bigint();
    res.write(all[i]);
  }
  res.end();
}

// --- deterministic content shared by both fakes ---------------------------------------

export function answerText(config: FakeConfig, model: string): string {
  return typeof config.answer === 'string' ? config.answer : config.answer(model);
}

/** An assistant prefix is continued: the answer's remainder when it starts with the prefix. */
export function continuation(answer: string, prefix: string | undefined): string {
  if (prefix === undefined) return answer;
  return answer.startsWith(prefix) ? answer.slice(prefix.length) : answer;
}

/**
 * When the last user turn asks to continue a quoted part of the answer (a gateway resuming
 * a stream without an assistant prefix): the rest of the answer after the longest opening
 * of it that the turn quotes, starting `repeatWords` words early. Else undefined.
 */
export function continuationAsked(config: FakeConfig, answer: string, lastUser: string): string | undefined {
  if (!/continue/i.test(lastUser)) return undefined;
  let quoted = answer.length;
  while (quoted > 0 && !lastUser.includes(answer.slice(0, quoted))) quoted--;
  if (quoted === 0) return undefined;
  let from = quoted;
  for (let word = 0; word < (config.repeatWords ?? 0); word++) from = answer.slice(0, from).search(/\S+\s*$/);
  return answer.slice(Math.max(0, from));
}

/** Word-by-word pieces that concatenate back to the text ("Hello", " world", "."). */
export function words(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** The pieces a stream sends: words(), or with `spaceAfterWords` each word with the space after it. */
export function streamPieces(config: FakeConfig, text: string): string[] {
  return config.spaceAfterWords ? (text.match(/^\s+|\S+\s*/g) ?? []) : words(text);
}

/** Tool-call arguments are streamed in two pieces, like real upstreams split JSON anywhere. */
export function halves(text: string): [string, string] {
  const half = Math.ceil(text.length / 2);
  return [text.slice(0, half), text.slice(half)];
}

/** The fakes' token count: whitespace-separated words. */
export function countTokens(text: string): number {
  return words(text).length;
}

/** Text of every message, for a deterministic prompt token count. */
export function promptText(value: unknown): string {
  if (typeof value === 'string') return value + ' ';
  if (Array.isArray(value)) return value.map(promptText).join('');
  if (typeof value === 'object' && value !== null) {
    const { text, content, system } = value as { text?: unknown; content?: unknown; system?: unknown };
    return promptText(system) + promptText(text) + promptText(content);
  }
  return '';
}
