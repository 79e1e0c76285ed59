// Puts a request on the wire with node:http rather than fetch: fetch merges repeated
// headers, refuses odd header values and always frames the body itself, and the fuzzer
// needs to send exactly the bytes it planned.
import http from 'node:http';

export interface WireRequest {
  method: string;
  /** Absolute URL of the API that hosts the operation plus the target path. */
  url: string;
  headers: [string, string][];
  body?: Buffer;
}

export interface WireResponse {
  status: number;
  /** Lower-case names; a repeated header keeps every value. */
  headers: Record<string, string[]>;
  body: Buffer;
}

/** Keep-alive, as real clients do: many fuzz cases are about reusing a connection after a bad request. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/** `fresh`: on a new connection rather than a kept-alive one. */
export function send(request: WireRequest, timeoutMs: number, fresh = false): Promise<WireResponse> {
  const url = new URL(request.url);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of request.headers) {
    const previous = headers[name];
    headers[name] = previous === undefined ? value : [previous, value].flat();
  }
  if (request.body) headers['content-length'] = String(request.body.length);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent: fresh ? false : agent, host: url.hostname, port: url.port, method: request.method, path: url.pathname + url.search, headers, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const byName: Record<string, string[]> = {};
          for (let i = 0; i < res.rawHeaders.length; i += 2) (byName[res.rawHeaders[i].toLowerCase()] ??= []).push(res.rawHeaders[i + 1]);
          resolve({ status: res.statusCode ?? 0, headers: byName, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no complete answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(request.body);
  });
}

/**
 * The server closed the connection under the request: a kept-alive connection it dropped
 * meanwhile (a race every HTTP/1.1 client has), or one it closed after answering early.
 */
export const isConnectionReset = (error: unknown) =>
  ['ECONNRESET', 'EPIPE'].includes((error as NodeJS.ErrnoException).code ?? '') || (error as Error).message === 'socket hang up';
