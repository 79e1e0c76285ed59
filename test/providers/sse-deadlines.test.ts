// The streaming deadlines of the SSE reader (server/providers/sse-reader.ts), on a raw
// upstream whose timing each test sets: the first token within firstTokenMs, then at most
// idleMs between tokens, counting only the time spent waiting for the upstream.
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAICompatibleProvider } from '../../server/providers/openai-compatible.js';
import type { CallContext, ChatRequest, Provider } from '../../server/providers/types.js';
import { collect, failure } from './support.js';

const hello: ChatRequest = { model: 'gpt-test', messages: [{ role: 'user', content: 'Say hello' }] };
const token = (content: string) => `data: ${JSON.stringify({ choices: [{ delta: { content }, finish_reason: null }] })}\n\n`;
const finish = `data: ${JSON.stringify({ choices: [{ delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;

let answer: (res: http.ServerResponse) => Promise<void>;
/** An upstream answer of `count` tokens, each `gapMs` after the one before, then the finish. */
const paced = (count: number, gapMs: number) => async (res: http.ServerResponse) => {
  for (let i = 0; i < count; i++) {
    await sleep(gapMs);
    res.write(token(`${i} `));
  }
  res.end(finish);
};
let server: http.Server;
let provider: Provider;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
    void answer(res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  provider = createOpenAICompatibleProvider({ id: 'raw', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
afterAll(async () => {
  await provider.close();
  server.closeAllConnections();
  server.close();
});

const ctx = (firstTokenMs: number, idleMs: number): CallContext => ({ signal: new AbortController().signal, timeouts: { connectMs: 1000, firstTokenMs, idleMs } });

describe('stream deadlines', () => {
  it('a stall after the first token times out at idleMs, even when firstTokenMs is far longer', async () => {
    answer = async (res) => {
      // The reader first waits under the long first-token deadline.
      await sleep(50);
      res.write(token('Hi'));
      await sleep(5000);
    };
    const started = performance.now();
    const err = await failure(collect(provider.chatStream(hello, ctx(5000, 150))));
    expect(err.kind).toBe('timeout');
    expect(err.details.timeout).toBe('idle');
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('tokens that each come within idleMs never time out, however long the whole answer takes', async () => {
    answer = paced(12, 60);
    const events = await collect(provider.chatStream(hello, ctx(500, 250)));
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    expect(events.filter((e) => e.type === 'delta')).toHaveLength(12);
  });

  it('each idle deadline starts at the token before it: tokens 2/3 of idleMs apart never time out', async () => {
    answer = paced(4, 200);
    const events = await collect(provider.chatStream(hello, ctx(1000, 300)));
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
  });

  it('time the consumer spends between two reads is not the upstream stalling', async () => {
    answer = paced(4, 30);
    const events = [];
    for await (const event of provider.chatStream(hello, ctx(500, 100))) {
      events.push(event);
      await sleep(250);
    }
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
  });

  it('a first token slower than firstTokenMs times out as first_token', async () => {
    answer = async (res) => {
      await sleep(800);
      res.end(token('late') + finish);
    };
    const err = await failure(collect(provider.chatStream(hello, ctx(150, 5000))));
    expect(err.details.timeout).toBe('first_token');
  });
});
