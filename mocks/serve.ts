// Mock of the whole API for frontend work: `npm run mock`.
//
// Prism 5.14 (static mode) answers every request from the contract's examples and validates
// requests. Prism cannot stream, so a small front server on MOCK_PORT answers streaming
// requests itself with the contract's literal SSE example, sent event by event, and proxies
// everything else to Prism unchanged. See mocks/README.md.
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
import { routes, type RouteDefinition } from '../generated/contract/routes.js';
import { deref } from '../scripts/codegen/contract.js';

const CONTRACT = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
const PRISM_BIN = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

export interface MockOptions {
  /** Port of the front server (0 picks a free one). Default: MOCK_PORT or 4010. */
  port?: number;
  host?: string;
  /** Pause between two SSE events. Default: MOCK_STREAM_DELAY_MS or 50. */
  streamDelayMs?: number;
  /** How long Prism may take to listen. Default: MOCK_PRISM_TIMEOUT_MS or 30000. */
  prismTimeoutMs?: number;
  /** Receives Prism's log lines (level MOCK_PRISM_LOG_LEVEL, default warn); discarded when absent. */
  log?: (line: string) => void;
  /** Called when Prism stops although close() was not called. */
  onPrismExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

export interface RunningMock {
  /** Base URL for both `base_url` and `mgmt_base_url`. */
  url: string;
  close(): Promise<void>;
}

type Json = Record<string, any>;

export async function startMock(options: MockOptions = {}): Promise<RunningMock> {
  const env = process.env;
  const port = options.port ?? Number(env.MOCK_PORT ?? 4010);
  const host = options.host ?? env.MOCK_HOST ?? '127.0.0.1';
  const streamDelayMs = options.streamDelayMs ?? Number(env.MOCK_STREAM_DELAY_MS ?? 50);
  const contract: Json = parse(readFileSync(CONTRACT, 'utf8'));
  const sseExamples = new Map(routes.filter((r) => r.sse).map((r) => [r.operationId, sseEvents(contract, r)]));

  const workDir = mkdtempSync(join(tmpdir(), 'platform-mock-'));
  const prismDocument = join(workDir, 'openapi.prism.json');
  writeFileSync(prismDocument, JSON.stringify(prismView(contract)));
  const prism = await startPrism(prismDocument, {
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

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: Error) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: `Mock could not reach Prism: ${error.message}` }));
      } else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const route = matchRoute(req.method ?? 'GET', new URL(req.url ?? '/', 'http://mock').pathname);
    if (route?.sse && wantsStream(req, body)) return stream(route, req, body, res);

    const upstream = await callPrism(prism.url, req, body);
    const headers = copyHeaders(upstream);
    // Prism sets `Deprecation: true` on deprecated operations, overwriting the value the
    // contract declares for the response (RFC 9745 `@<seconds>`): put the contract's back.
    const declared = route?.deprecated ? declaredHeaders(contract, route, upstream.statusCode!).deprecation : undefined;
    if (declared) headers.deprecation = declared;
    res.writeHead(upstream.statusCode!, headers);
    upstream.pipe(res);
  }

  /** Prism checks the request (auth, body, `Prefer: code=`); a 2xx from it becomes the SSE example. */
  async function stream(route: RouteDefinition, req: IncomingMessage, body: Buffer, res: ServerResponse) {
    const gate = await callPrism(prism.url, req, body, { accept: 'application/json' });
    const gateBody = await readBody(gate);
    const headers = copyHeaders(gate);
    if (gate.statusCode! < 200 || gate.statusCode! >= 300) {
      res.writeHead(gate.statusCode!, headers);
      res.end(gateBody);
      return;
    }
    delete headers['content-type'];
    delete headers['content-length'];
    delete headers['sl-violations'];
    res.writeHead(route.successStatus, {
      ...headers,
      ...declaredHeaders(contract, route, route.successStatus),
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
    });
    let gone = false;
    res.on('close', () => (gone = true));
    for (const [index, event] of sseExamples.get(route.operationId)!.entries()) {
      if (index > 0) await sleep(streamDelayMs);
      if (gone) return;
      res.write(event);
    }
    res.end();
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
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await prism.stop();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
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

/** The literal `text/event-stream` example of the route's success response, one string per event. */
function sseEvents(contract: Json, route: RouteDefinition): string[] {
  const example = responseFor(contract, route, route.successStatus)?.content?.['text/event-stream']?.example;
  if (typeof example !== 'string') throw new Error(`${route.operationId}: no literal text/event-stream example`);
  return example
    .split(/\r?\n\r?\n/)
    .map((event) => event.trim())
    .filter(Boolean)
    .map((event) => `${event}\n\n`);
}

/**
 * The document Prism reads. Prism 5.14 keeps only the last part of a repeated multipart field
 * unless the field's encoding has a `style`, so it rejects every upload to an array-of-files
 * field ("files must be array"). Its copy adds `style: form` to such fields; nothing else differs.
 */
function prismView(contract: Json): Json {
  const copy = structuredClone(contract);
  for (const pathItem of Object.values<Json>(copy.paths)) {
    for (const operation of Object.values<Json>(pathItem)) {
      const media = deref(copy, operation?.requestBody)?.content?.['multipart/form-data'];
      if (!media) continue;
      for (const [name, property] of Object.entries<Json>(deref(copy, media.schema)?.properties ?? {})) {
        if (deref(copy, property)?.type !== 'array') continue;
        media.encoding ??= {};
        media.encoding[name] = { ...media.encoding[name], style: 'form', explode: true };
      }
    }
  }
  return copy;
}

function pathPattern(template: string): RegExp {
  const segments = template.split('/').map((s) => (s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}/?$`);
}

// ------------------------------------------------------------------ HTTP helpers

function wantsStream(req: IncomingMessage, body: Buffer): boolean {
  if (req.headers.accept?.includes('text/event-stream')) return true;
  if (!req.headers['content-type']?.includes('json')) return false;
  try {
    return JSON.parse(body.toString('utf8'))?.stream === true;
  } catch {
    return false; // Prism answers the malformed body
  }
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
  opts: { timeoutMs: number; level: string; log?: (line: string) => void; onExit?: MockOptions['onPrismExit'] },
): Promise<PrismProcess> {
  const port = await freePort();
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
      `  Send Authorization: Bearer <any>; Prefer: code=404 picks a declared status; "stream": true streams.`,
    ].join('\n'),
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
