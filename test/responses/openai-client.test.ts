// The drop-in claim for the Responses API, proved with the official `openai` npm client
// (6.x), unchanged, against the running server at `${apiUrl}/ai/v2`: responses.create
// plain, streaming (raw events and the stream helper), with a function tool (and the tool
// loop), with an image input (reaching a vision upstream in its own format), and a stream
// that fails after it started (the client raises the platform's error).
import OpenAI from 'openai';
import type { FunctionTool } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { clientCatalog, PIXEL } from './support.js';

let vision: FakeUpstream;
let platform: TestPlatform;
let client: OpenAI;

beforeAll(async () => {
  vision = await startFakeOpenAI({ answer: 'A single white pixel.' });
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: clientCatalog(vision.url) });
  client = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v2`, apiKey: platform.adminKey, maxRetries: 0 });
}, 120_000);
afterAll(async () => {
  await platform?.close();
  await vision?.close();
});

const weather: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The current weather of a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};

describe('responses.create through the openai client', () => {
  it('plain: a completed response with output_text, a message item and usage', async () => {
    const response = await client.responses.create({ model: 'local-chat', input: 'What does hope mean?', instructions: 'Be brief.' });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.model).toBe('local-chat');
    expect(response.output_text).toContain('What does hope mean?');
    expect(response.output[0]!.type).toBe('message');
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    expect(response._request_id).toMatch(/^trc_/);
  });

  it('streaming: raw events in order whose deltas add up to the plain answer', async () => {
    const plain = await client.responses.create({ model: 'local-chat', input: 'What does hope mean?' });
    const stream = await client.responses.create({ model: 'local-chat', input: 'What does hope mean?', stream: true });
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(text).toBe(plain.output_text);
    expect(completed!.output_text).toBe(plain.output_text);
  });

  it('the stream helper (responses.stream) assembles the final response', async () => {
    const plain = await client.responses.create({ model: 'local-chat', input: 'What does hope mean?' });
    const runner = client.responses.stream({ model: 'local-chat', input: 'What does hope mean?' });
    let deltas = '';
    runner.on('response.output_text.delta', (event) => (deltas += event.delta));
    const final = await runner.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe(plain.output_text);
    expect(deltas).toBe(plain.output_text);
  });

  it('a function tool: a function_call the client reads, then the tool loop to a text answer', async () => {
    const first = await client.responses.create({ model: 'local-chat', input: 'What is the weather? city: Paris', tools: [weather], tool_choice: 'required' });
    const call = first.output.find((item) => item.type === 'function_call');
    if (!call || call.type !== 'function_call') throw new Error('no function call');
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Paris' });
    const second = await client.responses.create({
      model: 'local-chat',
      tools: [weather],
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 degrees' }],
    });
    expect(second.output_text).toContain('Sunny, 21 degrees');
  });

  it('a function tool streamed: the helper reassembles the arguments', async () => {
    const runner = client.responses.stream({ model: 'local-chat', input: 'What is the weather? city: Paris', tools: [weather], tool_choice: 'required' });
    const final = await runner.finalResponse();
    const call = final.output[0]!;
    if (call.type !== 'function_call') throw new Error('no function call');
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Paris' });
  });

  it('an image input reaches the vision upstream as an image_url part', async () => {
    vision.requests.length = 0;
    const response = await client.responses.create({
      model: 'vision',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is in this image?' }, { type: 'input_image', image_url: PIXEL, detail: 'low' }] }],
    });
    expect(response.output_text).toBe('A single white pixel.');
    const sent = vision.requests.at(-1)!.body;
    expect(sent.model).toBe('upstream-vision');
    expect(sent.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this image?' },
        { type: 'image_url', image_url: { url: PIXEL, detail: 'low' } },
      ],
    });
  });

  it('a stream that breaks after it started: the client raises the platform error', async () => {
    // Paced frames: the text before the cut reaches the platform before the socket dies.
    vision.config.chunkIntervalMs = 50;
    vision.faults.push({ type: 'cut', afterChunks: 4 });
    const received: string[] = [];
    const outcome = await (async () => {
      const stream = await client.responses.create({ model: 'vision', input: 'Describe it.', stream: true });
      for await (const event of stream) received.push(event.type);
    })().then(
      () => null,
      (error: unknown) => error,
    );
    vision.config.chunkIntervalMs = 0;
    expect(outcome).toBeInstanceOf(OpenAI.APIError);
    expect((outcome as InstanceType<typeof OpenAI.APIError>).message).toContain('The connection to the model provider dropped.');
    expect(received).toContain('response.output_text.delta');
  });

  it('a built-in tool: BadRequestError 400 naming it', async () => {
    const error = await client.responses.create({ model: 'local-chat', input: 'Search the web.', tools: [{ type: 'web_search' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain('The web_search tool is a built-in tool this platform does not run');
  });
});
