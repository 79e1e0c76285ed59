// A scriptable HTTP server for the SDK's tests: each route answers from a queue of steps
// (status + body + headers, slow answers, dropped connections, SSE streams with pauses and
// mid-stream error events); the last step repeats. Every request is recorded.
// Its pauses use the global setTimeout, so tests with fake timers control them too.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type SseItem = { event?: string; data: unknown } | { pauseMs: number } | { raw: string } | { destroy: true };

export type FixedStep =
  | { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }
  | { sse: SseItem[]; headers?: Record<string, string>; delayMs?: number }
  | { drop: true; delayMs?: number };
/** A step chosen per request (e.g. by its Authorization header). */
export type Step = FixedStep | { respond: (request: RecordedRequest) => FixedStep };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** `Date.now()` when the request arrived (fake time under fake timers). */
  at: number;
  /** Resolves when the client closed the connection before the answer was complete. */
  aborted: Promise<void>;
  wasAborted: () => boolean;
  /** The whole answer was written (not cut off by the client). */
  finished: () => boolean;
}

export interface FaultServer {
  url: string;
  requests: RecordedRequest[];
  /** Requests of one route, e.g. `POST /ai/v2/guarded/chat/completions`. */
  requestsTo(route: string): RecordedRequest[];
  script(route: string, ...steps: Step[]): void;
  reset(): void;
  close(): Promise<void>;
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const traceIdFor = (n: number) => `trc_${String(n).padStart(32, '0')}`;

export async function startFaultServer(): Promise<FaultServer> {
  const scripts = new Map<string, { steps: Step[]; next: number }>();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();

  const server = http.createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? '/').split('?')[0]!;
    let aborted = false;
    let markAborted!: () => void;
    const abortedPromise = new Promise<void>((resolve) => (markAborted = resolve));
    res.on('close', () => {
      if (!res.writableFinished) {
        aborted = true;
        markAborted();
      }
    });
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: Date.now(),
      aborted: abortedPromise,
      wasAborted: () => aborted,
      finished: () => res.writableFinished,
    };
    requests.push(record);
    const traceId = traceIdFor(requests.length);
    const script = scripts.get(`${req.method} ${path}`);
    if (!script) {
      res.writeHead(404, { 'content-type': 'application/json', 'x-trace-id': traceId });
      res.end(JSON.stringify({ detail: `no script for ${req.method} ${path}`, trace_id: traceId }));
      return;
    }
    const scripted = script.steps[Math.min(script.next, script.steps.length - 1)]!;
    script.next += 1;
    const step = 'respond' in scripted ? scripted.respond(record) : scripted;
    if (step.delayMs) await wait(step.delayMs);
    if (aborted) return;
    if ('drop' in step) {
      req.socket.destroy();
      return;
    }
    if ('sse' in step) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-trace-id': traceId, ...step.headers });
      res.flushHeaders();
      for (const item of step.sse) {
        if (aborted) return;
        if ('destroy' in item) {
          req.socket.destroy();
          return;
        }
        if ('pauseMs' in item) await wait(item.pauseMs);
        else if ('raw' in item) res.write(item.raw);
        else res.write(`${item.event ? `event: ${item.event}\n` : ''}data: ${typeof item.data === 'string' ? item.data : JSON.stringify(item.data)}\n\n`);
      }
      res.end();
      return;
    }
    const body = step.body === undefined ? '' : typeof step.body === 'string' ? step.body : JSON.stringify(step.body);
    res.writeHead(step.status, {
      ...(step.body !== undefined && typeof step.body !== 'string' ? { 'content-type': 'application/json' } : {}),
      'x-trace-id': traceId,
      ...step.headers,
    });
    res.end(body);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    requestsTo: (route) => requests.filter((r) => `${r.method} ${r.path.split('?')[0]}` === route),
    script(route, ...steps) {
      scripts.set(route, { steps, next: 0 });
    },
    reset() {
      scripts.clear();
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------- error bodies of the contract

export function aiError(name: string, code: number, retryable: boolean, category = 'provider', extra: Record<string, unknown> = {}) {
  return {
    error: { code, name, message: `${name} happened`, retryable, category, description: `${name} description` },
    trace_id: 'trc_body0000000000000000000000000001',
    ...extra,
  };
}
