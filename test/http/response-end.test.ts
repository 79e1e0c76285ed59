// The pipeline's end-of-response hooks share one `close` listener: each still runs once, in
// the order registered, whether the answer was sent whole or its client left.
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { onResponseEnd } from '../../server/http/response-end.js';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function serve(handler: http.RequestListener): Promise<string> {
  server = http.createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('onResponseEnd', () => {
  it('runs every hook once, in order, after the answer is sent, with one close listener', async () => {
    const seen: string[] = [];
    let listeners = -1;
    let resolveEnded!: () => void;
    const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
    const url = await serve((_req, res) => {
      const before = res.listenerCount('close');
      onResponseEnd(res, () => seen.push(`first ${res.writableFinished}`));
      onResponseEnd(res, () => seen.push('second'));
      onResponseEnd(res, () => {
        seen.push('third');
        resolveEnded();
      });
      listeners = res.listenerCount('close') - before;
      res.end('ok');
    });
    expect(await (await fetch(url)).text()).toBe('ok');
    await ended;
    expect(seen).toEqual(['first true', 'second', 'third']);
    expect(listeners).toBe(1);
  });

  it('runs the hooks when the client leaves before the answer', async () => {
    let resolveEnded!: (finished: boolean) => void;
    const ended = new Promise<boolean>((resolve) => (resolveEnded = resolve));
    const url = await serve((_req, res) => {
      onResponseEnd(res, () => resolveEnded(res.writableFinished));
      res.write('partial');
    });
    const controller = new AbortController();
    const res = await fetch(url, { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    expect(await ended).toBe(false);
  });
});
