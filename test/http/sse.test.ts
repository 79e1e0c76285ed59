// The SSE writer: OpenAI chat framing (data lines, then [DONE]) and named-event framing,
// a failure after the 200 reported in-band in the contract's error event shape, and a
// client that leaves stopping the producer.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { routesById } from '../../generated/contract/routes.js';
import { ApiError } from '../../server/errors.js';
import { writeSse } from '../../server/http/sse.js';
import { streamErrorEvent } from '../../server/http/errors/stream-event.js';
import { eventProblems } from '../support/contract.js';

const servers: { close(): void }[] = [];
afterEach(() => servers.splice(0).forEach((s) => s.close()));

/** Serves one stream produced by `events`, framed as the operation's contract says. */
async function serve(operationId: 'createGuardedChatCompletion' | 'createResponse', events: (res: express.Response) => AsyncIterable<object>) {
  const route = routesById[operationId];
  const app = express().get('/stream', async (_req, res) => {
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    await writeSse(res, events(res), {
      framing: route.sse!,
      signal: controller.signal,
      errorEvent: (error, sequence, last) => streamErrorEvent(route, error, 'trc_0123456789abcdef0123456789abcdef', sequence, last),
    });
  });
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/stream`;
}

const chunk = (content: string, finish: string | null = null, model = 'gloo-openai-gpt-5-mini') => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model,
  choices: [{ index: 0, delta: { content }, finish_reason: finish }],
});

const blocks = (text: string) => text.split('\n\n').filter(Boolean);

describe('writeSse', () => {
  it('frames chat chunks as data lines and ends with [DONE]', async () => {
    const url = await serve('createGuardedChatCompletion', async function* () {
      yield chunk('Hel');
      yield chunk('lo', 'stop');
    });
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(blocks(await res.text())).toEqual([`data: ${JSON.stringify(chunk('Hel'))}`, `data: ${JSON.stringify(chunk('lo', 'stop'))}`, 'data: [DONE]']);
  });

  it('hands the first event to the socket before the next one is produced, even within one burst', async () => {
    let heldBack: { corked: number; buffered: number } | undefined;
    const url = await serve('createGuardedChatCompletion', async function* (res) {
      yield chunk('Hel');
      // Resumed in the same tick as the first write (no I/O in between), as a burst is.
      heldBack = { corked: res.socket!.writableCorked, buffered: res.socket!.writableLength };
      yield chunk('lo', 'stop');
    });
    expect(blocks(await (await fetch(url)).text())).toEqual([`data: ${JSON.stringify(chunk('Hel'))}`, `data: ${JSON.stringify(chunk('lo', 'stop'))}`, 'data: [DONE]']);
    expect(heldBack).toEqual({ corked: 0, buffered: 0 });
  });

  it('sends the headers at once when the first event is not ready yet', async () => {
    let release!: () => void;
    const produced = new Promise<void>((resolve) => (release = resolve));
    const url = await serve('createGuardedChatCompletion', async function* () {
      await produced;
      yield chunk('late', 'stop');
    });
    // Resolves on the headers: it would wait forever if they waited for the first event.
    const res = await fetch(url);
    release();
    expect(res.status).toBe(200);
    expect(blocks(await res.text())).toEqual([`data: ${JSON.stringify(chunk('late', 'stop'))}`, 'data: [DONE]']);
  });

  it('frames Responses events with their names and no [DONE]', async () => {
    const url = await serve('createResponse', async function* () {
      yield { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi', sequence_number: 1 };
    });
    const [block] = blocks(await (await fetch(url)).text());
    expect(block.split('\n')[0]).toBe('event: response.output_text.delta');
  });

  it('reports a failure after the 200 as the contract\'s error chunk, with the trace id', async () => {
    const url = await serve('createGuardedChatCompletion', async function* () {
      yield chunk('partial');
      throw new ApiError('PROVIDER_TIMEOUT', 'The provider did not answer in time');
    });
    const res = await fetch(url);
    expect(res.status).toBe(200);
    const events = blocks(await res.text());
    expect(events).toHaveLength(2); // no [DONE] after an error
    const error = JSON.parse(events[1].slice('data: '.length));
    expect(error).toMatchObject({
      choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
      error: { code: 2001, name: 'PROVIDER_TIMEOUT', retryable: true, category: 'provider' },
      trace_id: 'trc_0123456789abcdef0123456789abcdef',
    });
    expect(eventProblems('createGuardedChatCompletion', error)).toEqual([]);
  });

  it('the error chunk continues the stream: its id and created, and the model that answered last (a resumed stream)', async () => {
    const url = await serve('createGuardedChatCompletion', async function* () {
      yield chunk('The ');
      yield chunk('quick ');
      yield chunk('brown ', null, 'gloo-anthropic-claude-haiku');
      yield chunk('fox ', null, 'gloo-anthropic-claude-haiku');
      throw new ApiError('PROVIDER_TIMEOUT', 'The provider did not answer in time');
    });
    const error = JSON.parse(blocks(await (await fetch(url)).text()).at(-1)!.slice('data: '.length));
    expect(error).toMatchObject({ id: 'chatcmpl-1', created: 1, model: 'gloo-anthropic-claude-haiku', choices: [{ finish_reason: 'error' }] });
  });

  it('reports a Responses failure as a named error event matching the contract', async () => {
    const url = await serve('createResponse', async function* () {
      throw new Error('boom');
    });
    const [block] = blocks(await (await fetch(url)).text());
    const [name, data] = block.split('\n');
    expect(name).toBe('event: error');
    const event = JSON.parse(data.slice('data: '.length));
    expect(event).toMatchObject({ type: 'error', code: 'INTERNAL_ERROR', trace_id: 'trc_0123456789abcdef0123456789abcdef' });
    expect(event.message).not.toContain('boom'); // internal details stay in the log
    expect(eventProblems('createResponse', event)).toEqual([]);
  });

  it('stops the producer when the client goes away', async () => {
    let produced = 0;
    let finished = false;
    const url = await serve('createGuardedChatCompletion', async function* () {
      try {
        for (;;) {
          produced++;
          yield chunk(`part ${produced}`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } finally {
        finished = true;
      }
    });
    const controller = new AbortController();
    const res = await fetch(url, { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await expect.poll(() => finished, { timeout: 2000 }).toBe(true);
    const atStop = produced;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(produced).toBe(atStop);
  });
});
