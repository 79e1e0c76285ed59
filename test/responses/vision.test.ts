// What fake upstreams receive from a response. Vision and image generation: image parts
// (base64 data URL and https URL) reach an OpenAI-compatible upstream as image_url parts and
// an Anthropic one as image blocks; a model without vision is refused before any upstream
// call; the image_generation tool on an OpenAI-compatible deployment draws with its
// image_model. Sampling fields and the end user reach both wire formats; the tradition
// instruction layer is sent first on v2 and never on v1; reasoning effort only to a
// reasoning model.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../../mocks/upstreams/fake-anthropic.js';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { createOpenAICompatibleProvider } from '../../server/providers/openai-compatible.js';
import { TRADITION_INSTRUCTIONS } from '../../server/gateway/tradition.js';
import { ctx } from '../providers/support.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { catalogOf, readEvents } from './support.js';

const DATA_URL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
const HTTPS_URL = 'https://example.org/cat.png';

let openai: FakeUpstream;
let claude: FakeUpstream;
let platform: TestPlatform;
/** A reasoning model's upstream: reports reasoning tokens in its usage, records what it got. */
let reasoner: http.Server;
const reasonerBodies: any[] = [];

beforeAll(async () => {
  reasoner = http.createServer(async (req, res) => {
    const body = JSON.parse(Buffer.concat(await req.toArray()).toString());
    reasonerBodies.push(body);
    const usage = { prompt_tokens: 10, completion_tokens: 30, completion_tokens_details: { reasoning_tokens: 26 } };
    if (body.stream) {
      // As OpenAI streams it: the text, then the finish, then the usage (reasoning tokens only there).
      const chunks = [
        { choices: [{ index: 0, delta: { role: 'assistant', content: 'Forty-two.' }, finish_reason: null }] },
        { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
        { choices: [], usage },
      ];
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${chunks.map((c) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'o-reasoner', ...c })}\n\n`).join('')}data: [DONE]\n\n`);
      return;
    }
    const answer = { choices: [{ message: { role: 'assistant', content: 'Forty-two.' }, finish_reason: 'stop' }], usage };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  reasoner.listen(0, '127.0.0.1');
  await once(reasoner, 'listening');
  openai = await startFakeOpenAI({ answer: 'A cat.' });
  claude = await startFakeAnthropic({ answer: 'A cat.' });
  const catalog = catalogOf({
    providers: [
      { id: 'oa', type: 'openai', base_url: `${openai.url}/v1` },
      { id: 'an', type: 'anthropic', base_url: claude.url },
      { id: 'rs', type: 'openai', base_url: `http://127.0.0.1:${(reasoner.address() as AddressInfo).port}/v1` },
    ],
    deployments: [
      { id: 'd-gpt', provider: 'oa', model: 'gpt-vision' },
      { id: 'd-claude', provider: 'an', model: 'claude-vision' },
      { id: 'd-blind', provider: 'oa', model: 'gpt-blind' },
      { id: 'd-reasoner', provider: 'rs', model: 'o-reasoner' },
    ],
    models: [
      { id: 'gpt', family: 'openai', context_window: 32_000, max_output_tokens: 1_000, capabilities: { vision: true }, deployments: ['d-gpt'] },
      { id: 'claude', family: 'anthropic', context_window: 32_000, max_output_tokens: 1_000, capabilities: { vision: true }, deployments: ['d-claude'] },
      { id: 'blind', family: 'openai', context_window: 32_000, max_output_tokens: 1_000, deployments: ['d-blind'] },
      { id: 'reasoner', family: 'openai', context_window: 32_000, max_output_tokens: 1_000, capabilities: { reasoning: true }, deployments: ['d-reasoner'] },
    ],
  });
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog });
}, 120_000);
afterAll(async () => {
  await platform?.close();
  await Promise.all([openai?.close(), claude?.close()]);
  reasoner?.close();
});

const ask = (model: string) =>
  platform.api('/ai/v2/guarded/responses', {
    method: 'POST',
    body: JSON.stringify({
      model,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'What are these?' }, { type: 'input_image', image_url: DATA_URL }, { type: 'input_image', image_url: HTTPS_URL, detail: 'high' }] }],
    }),
  });

describe('vision', () => {
  it('an OpenAI-compatible upstream gets image_url parts, data URL and https URL as given', async () => {
    const res = await ask('gpt');
    expect(res.status).toBe(200);
    expect((await res.json()).output_text).toBe('A cat.');
    expect(openai.requests.at(-1)!.body.messages.at(-1).content).toEqual([
      { type: 'text', text: 'What are these?' },
      { type: 'image_url', image_url: { url: DATA_URL } },
      { type: 'image_url', image_url: { url: HTTPS_URL, detail: 'high' } },
    ]);
  });

  it('an Anthropic upstream gets a base64 image block and a url image block', async () => {
    const res = await ask('claude');
    expect(res.status).toBe(200);
    expect(claude.requests.at(-1)!.body.messages.at(-1).content).toEqual([
      { type: 'text', text: 'What are these?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: DATA_URL.split(',')[1] } },
      { type: 'image', source: { type: 'url', url: HTTPS_URL } },
    ]);
  });

  it('a model without vision is 400 before any upstream call', async () => {
    const before = openai.requests.length;
    const res = await ask('blind');
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ name: 'UNSUPPORTED_MODEL', message: 'blind does not accept image input.' });
    expect(openai.requests.length).toBe(before);
  });
});

describe('image generation on an OpenAI-compatible upstream', () => {
  it('POSTs images/generations with the image model, size, quality and format, and returns the base64', async () => {
    const seen: unknown[] = [];
    const server = http.createServer(async (req, res) => {
      seen.push({ path: req.url, body: JSON.parse(Buffer.concat(await req.toArray()).toString()) });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ b64_json: 'aW1hZ2U=' }] }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const provider = createOpenAICompatibleProvider({ id: 'img', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` });
    try {
      const image = await provider.generateImage!({ model: 'gpt-image-1', prompt: 'A lighthouse', size: '1024x1024', quality: 'low', outputFormat: 'webp' }, ctx());
      expect(image).toEqual({ base64: 'aW1hZ2U=', mediaType: 'image/webp' });
      expect(seen).toEqual([{ path: '/v1/images/generations', body: { model: 'gpt-image-1', prompt: 'A lighthouse', n: 1, size: '1024x1024', quality: 'low', output_format: 'webp' } }]);
    } finally {
      await provider.close();
      server.close();
    }
  });
});

describe('sampling fields', () => {
  const sampled = { input: 'Describe a cat.', temperature: 1.5, top_p: 0.9, max_output_tokens: 50, user: 'end-user-7' };

  it.each([false, true])('an OpenAI-compatible upstream gets temperature, top_p, max_tokens and user as given (stream: %s)', async (stream) => {
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'gpt', stream, ...sampled }) });
    expect(res.status).toBe(200);
    await res.text();
    expect(openai.requests.at(-1)!.body).toMatchObject({ temperature: 1.5, top_p: 0.9, max_tokens: 50, user: 'end-user-7' });
  });

  it('an Anthropic upstream gets them in its own terms: temperature capped at its maximum 1, the user as metadata', async () => {
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'claude', ...sampled }) });
    expect(res.status).toBe(200);
    expect(claude.requests.at(-1)!.body).toMatchObject({ temperature: 1, top_p: 0.9, max_tokens: 50, metadata: { user_id: 'end-user-7' } });
  });

  it('left out, none is sent: the upstream uses its defaults', async () => {
    const res = await platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'gpt', input: 'Describe a cat.' }) });
    expect(res.status).toBe(200);
    const sent = openai.requests.at(-1)!.body;
    for (const field of ['temperature', 'top_p', 'max_tokens', 'user']) expect(sent).not.toHaveProperty(field);
  });
});

describe('tradition', () => {
  const messagesSent = async (path: string, body: Record<string, unknown>) => {
    const res = await platform.api(path, { method: 'POST', body: JSON.stringify({ model: 'gpt', instructions: 'Be brief.', input: 'What does hope mean?', ...body }) });
    expect(res.status).toBe(200);
    return openai.requests.at(-1)!.body.messages;
  };

  it('v2 sends the instruction layer of the tradition asked for first, before the instructions', async () => {
    expect(await messagesSent('/ai/v2/guarded/responses', { tradition: 'catholic' })).toEqual([
      { role: 'system', content: TRADITION_INSTRUCTIONS.catholic },
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What does hope mean?' },
    ]);
    expect((await messagesSent('/ai/v2/guarded/responses', {}))[0]).toEqual({ role: 'system', content: TRADITION_INSTRUCTIONS.default });
  });

  it('v1 (direct) never sends it, even when the request names a tradition', async () => {
    expect(await messagesSent('/ai/v1/responses', { tradition: 'catholic' })).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What does hope mean?' },
    ]);
  });
});

describe('reasoning', () => {
  const think = (model: string) =>
    platform.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model, input: 'What is six times seven?', reasoning: { effort: 'low' } }) });

  it('a reasoning model gets reasoning_effort; its reasoning tokens give a reasoning item and the usage detail', async () => {
    const res = await think('reasoner');
    const body = await res.json();
    expect(res.status).toBe(200);
    expect(reasonerBodies.at(-1).reasoning_effort).toBe('low');
    expect(body.output.map((item: { type: string }) => item.type)).toEqual(['message', 'reasoning']);
    expect(body.output[1]).toMatchObject({ summary: [], status: 'completed' });
    expect(body.output[1].id).toMatch(/^rs_/);
    expect(body.usage).toMatchObject({ input_tokens: 10, output_tokens: 30, output_tokens_details: { reasoning_tokens: 26 } });
  });

  it('orders output[] the same streamed and not: the reasoning item last (a stream learns of it from its final usage)', async () => {
    const plain = await (await think('reasoner')).json();
    const res = await platform.api('/ai/v2/guarded/responses', {
      method: 'POST',
      body: JSON.stringify({ model: 'reasoner', input: 'What is six times seven?', reasoning: { effort: 'low' }, stream: true }),
    });
    const events = await readEvents(res);
    const completed = events.find((e) => e.event === 'response.completed')!.data.response;
    expect(completed.output.map((item: { type: string }) => item.type)).toEqual(plain.output.map((item: { type: string }) => item.type));
    expect(completed.output.map((item: { type: string }) => item.type)).toEqual(['message', 'reasoning']);
  });

  it('a model without reasoning is not sent reasoning_effort (it would refuse it)', async () => {
    const res = await think('gpt');
    expect(res.status).toBe(200);
    expect(openai.requests.at(-1)!.body).not.toHaveProperty('reasoning_effort');
    expect((await res.json()).output.map((item: { type: string }) => item.type)).toEqual(['message']);
  });
});
