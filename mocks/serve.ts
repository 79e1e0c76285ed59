// Mock of the whole API for frontend work: `npm run mock`.
//
// Prism 5.14 (static mode) answers every request from the contract's examples and validates
// requests. Prism cannot stream, so a small front server on MOCK_PORT answers streaming
// requests itself with the contract's literal SSE examples, sent event by event, and proxies
// everything else to Prism. `Prefer: example=<name>` picks any named example of the contract
// (JSON or SSE, success or failure). The mock's own errors (and Prism's) carry a trace id in
// the operation's error shape. See mocks/README.md.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http, { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import type { ErrorName } from '../generated/contract/errors.js';
import { routes, type RouteDefinition } from '../generated/contract/routes.js';
import { defaultExample, deref } from '../scripts/codegen/contract.js';
import { ApiError, type ValidationIssue } from '../server/errors.js';
import { errorSchemaFor, renderError } from '../server/http/errors/render.js';
import { newTraceId, TRACE_HEADER } from '../server/http/trace.js';

const CONTRACT = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
const PRISM_BIN = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);
const SSE = 'text/event-stream';

export interface MockOptions {
  /** Port of the front server (0 picks a free one). Default: MOCK_PORT or 4010. */
  port?: number;
  /** Port of the inner Prism process (0 picks a free one). Default: MOCK_PRISM_PORT or a free port. */
  prismPort?: number;
  host?: string;
  /** Pause between two SSE events. Default: MOCK_STREAM_DELAY_MS or 50. */
  streamDelayMs?: number;
  /** How long Prism may take to listen. Default: MOCK_PRISM_TIMEOUT_MS or 30000. */
  prismTimeoutMs?: number;
  /** The contract to serve. Default: the repository's openapi.yaml (its operations must be those of the route table). */
  contract?: string;
  /** Receives Prism's log lines (level MOCK_PRISM_LOG_LEVEL, default warn); discarded when absent. */
  log?: (line: string) => void;
  /** Called when Prism stops although close() was not called. */
  onPrismExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

export interface RunningMock {
  /** Base URL for both `base_url` and `mgmt_base_url`. */
  url: string;
  /** The inner Prism process (no streams, no trace ids): for debugging the mock only. */
  prismUrl: string;
  close(): Promise<void>;
}

type Json = Record<string, any>;

/** One named example of an operation's response: `examples.<name>` of (status, media type). */
interface NamedExample {
  name: string;
  status: number;
  mediaType: string;
  value: unknown;
}

interface Answer {
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

export async function startMock(options: MockOptions = {}): Promise<RunningMock> {
  const env = process.env;
  const port = options.port ?? portSetting('MOCK_PORT', env.MOCK_PORT) ?? 4010;
  const prismPort = options.prismPort ?? portSetting('MOCK_PRISM_PORT', env.MOCK_PRISM_PORT) ?? 0;
  const host = options.host ?? env.MOCK_HOST ?? '127.0.0.1';
  const streamDelayMs = options.streamDelayMs ?? Number(env.MOCK_STREAM_DELAY_MS ?? 50);
  const contract: Json = parse(readFileSync(options.contract ?? CONTRACT, 'utf8'));
  const sseDefaults = new Map(routes.filter((r) => r.sse).map((r) => [r.operationId, defaultSseEvents(contract, r)]));
  const named = new Map(routes.map((r) => [r.operationId, namedExamples(contract, r)]));
  const citationDefaults = new Map(
    routes.flatMap((r) => {
      const declared = requestProperty(contract, r, 'include_citations');
      return declared ? [[r.operationId, declared.default !== false] as const] : [];
    }),
  );

  const workDir = mkdtempSync(join(tmpdir(), 'platform-mock-'));
  const prismDocument = join(workDir, 'openapi.prism.json');
  writeFileSync(prismDocument, JSON.stringify(prismView(contract)));
  const prism = await startPrism(prismDocument, {
    port: prismPort,
    timeoutMs: options.prismTimeoutMs ?? Number(env.MOCK_PRISM_TIMEOUT_MS ?? 30_000),
    level: env.MOCK_PRISM_LOG_LEVEL ?? 'warn',
    log: options.log,
    onExit: options.onPrismExit,
  }).catch((error) => {
    rmSync(workDir, { recursive: true, force: true });
    throw error;
  });

  const matchers = routes.map((route) => ({ route, pattern: pathPattern(route.path) }));
  const matchRoute = (method: string, pathname: string) =>
    matchers.find((m) => m.route.method === method.toLowerCase() && m.pattern.test(pathname))?.route;
  /** The API a path belongs to, for the error shape of a path the contract does not have. */
  const apiOf = (pathname: string) =>
    matchers.find((m) => m.pattern.test(pathname))?.route.api ?? (pathname.startsWith('/api/') ? 'management' : 'api');

  const server = http.createServer((req, res) => {
    const traceId = newTraceId();
    const pathname = new URL(req.url ?? '/', 'http://mock').pathname;
    handle(req, res, pathname, traceId).catch((error: Error) => {
      if (res.headersSent) return void res.destroy();
      const route = matchRoute(req.method ?? 'GET', pathname);
      const failure = new ApiError('INTERNAL_ERROR', `Mock could not reach Prism: ${error.message}`, { status: 502 });
      send(res, ownError(route, apiOf(pathname), failure, traceId));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse, pathname: string, traceId: string): Promise<void> {
    const body = await readBody(req);
    const route = matchRoute(req.method ?? 'GET', pathname);
    const streaming = Boolean(route?.sse) && wantsStream(req, body);
    const prefer = parsePrefer(req.headers.prefer);
    const forward: Record<string, string> = {};
    let sseName: string | undefined;

    if (route && prefer.example !== undefined) {
      const all = named.get(route.operationId)!;
      const code = prefer.code === undefined ? undefined : Number(prefer.code);
      const candidates = all.filter((e) => e.name === prefer.example && (code === undefined || e.status === code));
      const sse = candidates.find((e) => e.mediaType === SSE && isSuccess(e.status));
      const other = candidates.find((e) => e.mediaType !== SSE);
      if (streaming && sse) {
        // Prism checks the request against the success response; the SSE example is ours.
        sseName = sse.name;
        forward.prefer = formatPrefer({ ...prefer, example: undefined });
      } else if (other) {
        // `Prefer: example=` alone: add the status that holds the example, Prism needs it.
        forward.prefer = formatPrefer({ ...prefer, code: String(other.status) });
      } else {
        const known = [...new Set(all.map((e) => `${e.name} (${e.status}${e.mediaType === SSE ? ', streaming' : ''})`))];
        const reason = sse
          ? `example "${prefer.example}" is a streaming example: send "stream": true or Accept: ${SSE}`
          : `${route.operationId} has no example named "${prefer.example}"${code === undefined ? '' : ` for status ${code}`}`;
        const message = `Mock: ${reason}. Named examples of ${route.operationId}: ${known.join(', ') || 'none'}.`;
        return send(res, ownError(route, route.api, new ApiError(sse ? 'INVALID_REQUEST' : 'NOT_FOUND', message), traceId));
      }
    }

    if (streaming) return stream(route!, req, body, res, forward, sseName, traceId);

    const upstream = await callPrism(prism.url, req, body, forward);
    const answer = finish(route, pathname, prefer, { status: upstream.statusCode!, headers: copyHeaders(upstream), body: await readBody(upstream) }, traceId);
    // Prism sets `Deprecation: true` on deprecated operations, overwriting the value the
    // contract declares for the response (RFC 9745 `@<seconds>`): put the contract's back.
    const declared = route?.deprecated ? declaredHeaders(contract, route, answer.status).deprecation : undefined;
    if (declared) answer.headers.deprecation = declared;
    if (route && citationDefaults.has(route.operationId) && isSuccess(answer.status) && !wantsCitations(route, body)) {
      answer.body = withoutCitations(answer.body);
    }
    send(res, answer);
  }

  /** Prism checks the request (auth, body, `Prefer: code=`); a 2xx from it becomes the SSE example. */
  async function stream(
    route: RouteDefinition,
    req: IncomingMessage,
    body: Buffer,
    res: ServerResponse,
    forward: Record<string, string>,
    sseName: string | undefined,
    traceId: string,
  ) {
    const gate = await callPrism(prism.url, req, body, { ...forward, accept: 'application/json' });
    const gateBody = await readBody(gate);
    const headers = copyHeaders(gate);
    if (!isSuccess(gate.statusCode!)) {
      return send(res, finish(route, '', parsePrefer(forward.prefer ?? req.headers.prefer), { status: gate.statusCode!, headers, body: gateBody }, traceId));
    }
    let events = sseName
      ? sseEvents(named.get(route.operationId)!.find((e) => e.name === sseName && e.mediaType === SSE)!.value)
      : sseDefaults.get(route.operationId)!;
    if (citationDefaults.has(route.operationId) && !wantsCitations(route, body)) events = eventsWithoutCitations(events);
    delete headers['content-type'];
    delete headers['content-length'];
    delete headers['sl-violations'];
    // An in-stream error carries its trace id in the event: the header says the same.
    const streamTrace = events.map((e) => /"trace_id"\s*:\s*"([^"]+)"/.exec(e)?.[1]).find(Boolean) ?? traceId;
    const streamHeaders: OutgoingHttpHeaders = {
      ...headers,
      ...declaredHeaders(contract, route, route.successStatus),
      'content-type': SSE,
      'cache-control': 'no-cache',
      [TRACE_HEADER.toLowerCase()]: streamTrace,
    };
    mockPlatformHeaders(streamHeaders);
    res.writeHead(route.successStatus, streamHeaders);
    let gone = false;
    res.on('close', () => (gone = true));
    for (const [index, event] of events.entries()) {
      if (index > 0) await sleep(streamDelayMs);
      if (gone) return;
      res.write(event);
    }
    res.end();
  }

  /**
   * Prism's own problems (unknown path, undeclared status, unknown example, ...) and its
   * request validation failures become the operation's error shape with a fresh trace id;
   * the contract's examples pass unchanged. Every answer gets `X-Trace-Id`.
   */
  function finish(route: RouteDefinition | undefined, pathname: string, prefer: Prefer, answer: Answer, traceId: string): Answer {
    const api = route?.api ?? apiOf(pathname);
    const contentType = String(answer.headers['content-type'] ?? '');
    if (contentType.includes('application/problem+json')) {
      const problem = parseJson(answer.body) ?? {};
      const issues = (problem.validation ?? []).map(issueOf);
      const message = `Mock (Prism): ${problem.title ?? 'error'}${problem.detail ? `: ${problem.detail}` : ''}`;
      const failure = new ApiError(errorNameFor(answer.status), message, { status: answer.status, issues });
      return ownError(route, api, failure, traceId, answer.headers);
    }
    const violations = requestViolations(answer.headers['sl-violations']);
    if (route && violations.length > 0 && answer.status >= 400 && answer.status !== 401 && prefer.example === undefined) {
      // Prism answered the contract's 400/422 example; the request's real reasons are more useful.
      const issues = violations.map(issueOf);
      const message = issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; ');
      const failure = new ApiError(answer.status === 422 ? 'VALIDATION_ERROR' : 'INVALID_REQUEST', message, { status: answer.status, issues });
      return ownError(route, api, failure, traceId, answer.headers);
    }
    const json = contentType.includes('json') ? parseJson(answer.body) : undefined;
    if (answer.status >= 400 && typeof json?.trace_id !== 'string') {
      // Every error body of the contract has a trace id: one without is Prism's own (e.g. malformed JSON).
      const reason = json?.error?.message ?? json?.detail ?? json?.error ?? (answer.body.toString('utf8').slice(0, 200) || `HTTP ${answer.status}`);
      const failure = new ApiError(errorNameFor(answer.status), `Mock (Prism): ${typeof reason === 'string' ? reason : JSON.stringify(reason)}`, { status: answer.status });
      return ownError(route, api, failure, traceId, answer.headers);
    }
    // Prism sends the 429's declared Retry-After whatever the example; a non-retryable error
    // (SPENDING_LIMIT_EXCEEDED) has none in the contract's words.
    if (json?.error?.retryable === false) delete answer.headers['retry-after'];
    // Nor does it carry quota headers (those come with QUOTA_EXCEEDED).
    if (json?.error?.name === 'SPENDING_LIMIT_EXCEEDED') for (const name of Object.keys(answer.headers)) if (name.startsWith('x-ratelimit-')) delete answer.headers[name];
    answer.headers[TRACE_HEADER.toLowerCase()] = typeof json?.trace_id === 'string' ? json.trace_id : traceId;
    return answer;
  }

  try {
    server.listen(port, host);
    await once(server, 'listening');
  } catch (error) {
    await prism.stop();
    rmSync(workDir, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(code === 'EADDRINUSE' ? `Port ${port} is in use: set MOCK_PORT to another port.` : String(error));
  }
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;

  return {
    url,
    prismUrl: prism.url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await prism.stop();
      rmSync(workDir, { recursive: true, force: true });
    },
  };

  function wantsCitations(route: RouteDefinition, body: Buffer): boolean {
    const asked = parseJson(body)?.include_citations;
    return typeof asked === 'boolean' ? asked : citationDefaults.get(route.operationId)!;
  }
}

/** An error of the mock itself, rendered like the server renders it, with `X-Trace-Id`. */
function ownError(route: RouteDefinition | undefined, api: 'api' | 'management', error: ApiError, traceId: string, from: OutgoingHttpHeaders = {}): Answer {
  const body = Buffer.from(JSON.stringify(renderError(error, errorSchemaFor(route, error, api), traceId)));
  const headers: OutgoingHttpHeaders = {};
  // Keep Prism's CORS headers, `sl-violations`, `WWW-Authenticate`, ...; the body is ours.
  for (const [name, value] of Object.entries(from)) if (name !== 'content-type' && name !== 'content-length') headers[name] = value;
  headers['access-control-allow-origin'] ??= '*';
  headers['access-control-expose-headers'] ??= '*';
  headers['content-type'] = 'application/json';
  headers[TRACE_HEADER.toLowerCase()] = traceId;
  return { status: error.status, headers, body };
}

function errorNameFor(status: number): ErrorName {
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 422) return 'VALIDATION_ERROR';
  return status >= 500 ? 'INTERNAL_ERROR' : 'INVALID_REQUEST';
}

function issueOf(violation: { location?: string[]; path?: string[]; message?: string }): ValidationIssue {
  const location = violation.location ?? violation.path ?? [];
  return { loc: location[0] === 'request' ? location.slice(1) : location, msg: violation.message ?? 'invalid', type: 'value_error' };
}

function requestViolations(header: OutgoingHttpHeaders[string]): Array<{ location: string[]; message: string }> {
  if (typeof header !== 'string') return [];
  try {
    return (JSON.parse(header) as Array<{ location: string[]; message: string }>).filter((v) => v.location?.[0] === 'request');
  } catch {
    return [];
  }
}

function send(res: ServerResponse, answer: Answer): void {
  mockPlatformHeaders(answer.headers);
  res.writeHead(answer.status, { ...answer.headers, 'content-length': String(answer.body.length) });
  res.end(answer.body);
}

const isSuccess = (status: number) => status >= 200 && status < 300;

function parseJson(body: Buffer): Json | undefined {
  try {
    const value = JSON.parse(body.toString('utf8'));
    return value && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Prism sends every header the contract declares, with its example. The mock never replays
 * an Idempotency-Key answer, and its X-Request-Id is the answer's trace id, as the server's.
 */
function mockPlatformHeaders(headers: OutgoingHttpHeaders): void {
  delete headers['idempotent-replayed'];
  const trace = headers[TRACE_HEADER.toLowerCase()];
  if (trace !== undefined) headers['x-request-id'] = trace;
}

// ------------------------------------------------------------------ Prefer header

interface Prefer {
  code?: string;
  example?: string;
  [preference: string]: string | undefined;
}

/** `code=429, example=spending_limit_exceeded` (commas or semicolons, optional quotes). */
function parsePrefer(header: string | string[] | undefined): Prefer {
  const result: Prefer = {};
  for (const part of [header ?? []].flat().join(',').split(/[,;]/)) {
    const [key, ...rest] = part.split('=');
    if (!key.trim()) continue;
    result[key.trim().toLowerCase()] = rest.join('=').trim().replace(/^"(.*)"$/, '$1');
  }
  return result;
}

function formatPrefer(prefer: Prefer): string {
  return Object.entries(prefer)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => (value === '' ? key : `${key}=${value}`))
    .join(', ');
}

// ------------------------------------------------------------------ contract helpers

function responseFor(contract: Json, route: RouteDefinition, status: number): Json | undefined {
  return deref(contract, contract.paths[route.path][route.method].responses[String(status)]);
}

/** The response headers the contract declares for (route, status), lower-cased, with their example values. */
function declaredHeaders(contract: Json, route: RouteDefinition, status: number): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, node] of Object.entries<Json>(responseFor(contract, route, status)?.headers ?? {})) {
    const header = deref(contract, node)!;
    const value = header.example ?? header.schema?.example ?? header.schema?.enum?.[0] ?? header.schema?.default;
    if (value !== undefined) result[name.toLowerCase()] = String(value);
  }
  return result;
}

/** Every `examples.<name>` of every response (status, media type) of the operation. */
function namedExamples(contract: Json, route: RouteDefinition): NamedExample[] {
  const result: NamedExample[] = [];
  for (const [status, node] of Object.entries<Json>(contract.paths[route.path][route.method].responses ?? {})) {
    if (!/^\d{3}$/.test(status)) continue;
    for (const [mediaType, media] of Object.entries<Json>(deref(contract, node)?.content ?? {})) {
      for (const [name, example] of Object.entries<Json>(media.examples ?? {})) {
        const value = deref(contract, example)?.value;
        if (value !== undefined) result.push({ name, status: Number(status), mediaType, value });
      }
    }
  }
  return result;
}

/** The default (first named) `text/event-stream` example of the route's success response, one string per event. */
function defaultSseEvents(contract: Json, route: RouteDefinition): string[] {
  const example = defaultExample(contract, responseFor(contract, route, route.successStatus)?.content?.[SSE]);
  if (typeof example !== 'string') throw new Error(`${route.operationId}: no literal ${SSE} example`);
  return sseEvents(example);
}

function sseEvents(example: unknown): string[] {
  return String(example)
    .split(/\r?\n\r?\n/)
    .map((event) => event.trim())
    .filter(Boolean)
    .map((event) => `${event}\n\n`);
}

/** The request body property `name` of the route (through `allOf`), when it declares one. */
function requestProperty(contract: Json, route: RouteDefinition, name: string): Json | undefined {
  const operation = contract.paths[route.path][route.method];
  const schema = deref(contract, deref(contract, operation.requestBody)?.content?.['application/json']?.schema);
  const find = (node: Json | undefined, depth: number): Json | undefined => {
    const s = node && deref(contract, node);
    if (!s || depth > 8) return undefined;
    if (s.properties?.[name]) return deref(contract, s.properties[name]);
    for (const part of [...(s.allOf ?? []), ...(s.anyOf ?? []), ...(s.oneOf ?? [])]) {
      const found = find(part, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return find(schema, 0);
}

/** A JSON answer without its top-level `citations` (`include_citations: false`). */
function withoutCitations(body: Buffer): Buffer {
  const json = parseJson(body);
  if (!json || !('citations' in json)) return body;
  delete json.citations;
  return Buffer.from(JSON.stringify(json));
}

/** SSE events without citations: the citations-only chunk goes, a `citations` field elsewhere is removed. */
function eventsWithoutCitations(events: string[]): string[] {
  return events.flatMap((event) => {
    const lines = event.trimEnd().split('\n');
    const dataAt = lines.findIndex((l) => l.startsWith('data:'));
    const data = dataAt < 0 ? undefined : parseJson(Buffer.from(lines[dataAt].slice(5)));
    if (!data || !('citations' in data)) return [event];
    if (Array.isArray(data.choices) && data.choices.length === 0) return [];
    delete data.citations;
    lines[dataAt] = `data: ${JSON.stringify(data)}`;
    return [`${lines.join('\n')}\n\n`];
  });
}

/**
 * The document Prism reads. Differences from the contract, all in multipart request bodies:
 * - Prism 5.14 keeps only the last part of a repeated multipart field unless the field's
 *   encoding has a `style`, so it rejects every upload to an array-of-files field ("files must
 *   be array"): such fields get `style: form`.
 * - Prism checks every multipart field that has an `encoding` entry for URI-reserved
 *   characters (`#`, `/`, `,`, `(`, ...) unless `allowReserved` is true, so it refuses any
 *   file whose content has one (every Markdown file): multipart encodings get `allowReserved: true`.
 */
function prismView(contract: Json): Json {
  const copy = structuredClone(contract);
  for (const pathItem of Object.values<Json>(copy.paths)) {
    for (const operation of Object.values<Json>(pathItem)) {
      const media = deref(copy, operation?.requestBody)?.content?.['multipart/form-data'];
      if (!media) continue;
      media.encoding ??= {};
      for (const [name, property] of Object.entries<Json>(deref(copy, media.schema)?.properties ?? {})) {
        if (deref(copy, property)?.type !== 'array') continue;
        media.encoding[name] = { ...media.encoding[name], style: 'form', explode: true };
      }
      for (const name of Object.keys(media.encoding)) media.encoding[name] = { ...media.encoding[name], allowReserved: true };
    }
  }
  return copy;
}

function pathPattern(template: string): RegExp {
  const segments = template.split('/').map((s) => (s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}/?$`);
}

// ------------------------------------------------------------------ HTTP helpers

function portSetting(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${name} must be a port number (0 to 65535), not "${value}".`);
  return port;
}

function wantsStream(req: IncomingMessage, body: Buffer): boolean {
  if (req.headers.accept?.includes(SSE)) return true;
  if (!req.headers['content-type']?.includes('json')) return false;
  return parseJson(body)?.stream === true; // Prism answers a malformed body
}

async function readBody(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function callPrism(base: string, req: IncomingMessage, body: Buffer, override: Record<string, string> = {}) {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  Object.assign(headers, override);
  if (headers.prefer === '') delete headers.prefer;
  if (body.length > 0 || req.headers['content-length']) headers['content-length'] = String(body.length);
  return new Promise<IncomingMessage>((resolve, reject) => {
    const upstream = http.request(new URL(req.url ?? '/', base), { method: req.method, headers }, resolve);
    upstream.on('error', reject);
    upstream.end(body);
  });
}

function copyHeaders(upstream: IncomingMessage): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(upstream.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  return headers;
}

// ------------------------------------------------------------------ Prism process

interface PrismProcess {
  url: string;
  stop(): Promise<void>;
}

async function startPrism(
  document: string,
  opts: { port: number; timeoutMs: number; level: string; log?: (line: string) => void; onExit?: MockOptions['onPrismExit'] },
): Promise<PrismProcess> {
  if (opts.port !== 0 && (await canConnect(opts.port))) throw new Error(`Port ${opts.port} is in use: set MOCK_PRISM_PORT to another port (or leave it unset for a free one).`);
  const port = opts.port || (await freePort());
  const url = `http://127.0.0.1:${port}`;
  // --errors=false: violations are reported in the `sl-violations` header instead of
  // replacing the example with a 500 (the contract's examples are the point of the mock).
  const args = [PRISM_BIN, 'mock', document, '--host', '127.0.0.1', '--port', String(port), '--errors=false', '--verboseLevel', opts.level];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let recent = '';
  const collect = (chunk: Buffer) => {
    recent = (recent + chunk.toString()).slice(-4000);
    for (const line of chunk.toString().split('\n')) if (line.trim()) opts.log?.(`[prism] ${line}`);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);

  let stopping = false;
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const killOnExit = () => child.kill();
  process.on('exit', killOnExit);
  void exited.then(([code, signal]) => {
    process.off('exit', killOnExit);
    if (!stopping) opts.onExit?.(code, signal);
  });

  const deadline = Date.now() + opts.timeoutMs;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null) throw new Error(`Prism exited with code ${child.exitCode} before listening:\n${recent}`);
    if (Date.now() > deadline) {
      stopping = true;
      child.kill();
      throw new Error(`Prism did not listen on ${url} within ${opts.timeoutMs} ms (MOCK_PRISM_TIMEOUT_MS). Its output:\n${recent || '(none yet)'}`);
    }
    await sleep(100);
  }

  return {
    url,
    async stop() {
      stopping = true;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

// ------------------------------------------------------------------ CLI

async function main() {
  let mock: RunningMock | undefined;
  let exiting = false;
  const shutdown = async (code: number) => {
    if (exiting) return;
    exiting = true;
    await mock?.close().catch(() => undefined);
    process.exit(code);
  };
  process.once('SIGINT', () => void shutdown(0));
  process.once('SIGTERM', () => void shutdown(0));

  try {
    mock = await startMock({
      log: (line) => console.error(line),
      onPrismExit: (code, signal) => {
        if (signal === 'SIGINT' || signal === 'SIGTERM') return void shutdown(0);
        console.error(`Prism stopped unexpectedly (exit code ${code}); stopping the mock.`);
        void shutdown(1);
      },
    });
  } catch (error) {
    console.error(`Mock server failed to start: ${(error as Error).message}`);
    process.exit(1);
  }
  console.log(
    [
      `Mock API (openapi.yaml examples via Prism, SSE streamed) on ${mock.url}`,
      `  base_url      = ${mock.url}`,
      `  mgmt_base_url = ${mock.url}   (the management /api/v1/... paths share this port)`,
      `  Prism (inner, no streams) on ${mock.prismUrl}   (MOCK_PRISM_PORT)`,
      `  Send Authorization: Bearer <any>; "stream": true streams; Prefer: code=429 or`,
      `  Prefer: example=<name> picks a declared answer (failures too, see mocks/README.md).`,
    ].join('\n'),
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
