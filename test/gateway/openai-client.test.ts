// The drop-in claim, proved with the official `openai` npm client (6.x), unchanged, against
// the running server: pointed at `${apiUrl}/ai/v2` (and `/ai/v1`) it chats (plain,
// streaming, tools, JSON schema), lists models, embeds (float and base64), and turns our
// error bodies into its own typed errors with readable messages.
import AjvModule from 'ajv';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
let client: OpenAI;
let v1: OpenAI;

beforeAll(async () => {
  platform = await startTestPlatform();
  // maxRetries 0: an error must surface from the first answer, not after backoff.
  client = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v2`, apiKey: platform.adminKey, maxRetries: 0 });
  v1 = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v1`, apiKey: platform.adminKey, maxRetries: 0 });
});
afterAll(() => platform?.close());

const question: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What does hope mean?' }];

const weather: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather of a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};

/** The error a call rejected with (fails the test when it resolved). */
async function rejection(call: () => Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const outcome = await call().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  if (outcome.ok) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value).slice(0, 300)}`);
  expect(outcome.error).toBeInstanceOf(OpenAI.APIError);
  return outcome.error as InstanceType<typeof OpenAI.APIError>;
}

describe('chat.completions.create through the openai client (v2)', () => {
  it('answers a plain request with the model, the text and consistent usage', async () => {
    const completion = await client.chat.completions.create({ model: 'local-chat', messages: question });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('local-chat');
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]!.index).toBe(0);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.role).toBe('assistant');
    expect(typeof completion.choices[0]!.message.content).toBe('string');
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
    // The platform's own fields travel beside OpenAI's.
    expect(completion).toMatchObject({ provider: 'local', routing_mechanism: 'direct_model_selection' });
  });

  it('streams chunks whose text adds up to the non-streamed answer, with usage when asked', async () => {
    const whole = await client.chat.completions.create({ model: 'local-chat', messages: question });
    const stream = await client.chat.completions.create({
      model: 'local-chat',
      messages: question,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const finishes: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('local-chat');
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        if (choice.finish_reason) finishes.push(choice.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(4);
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finishes).toEqual(['stop']);
    expect(usage).toBeTruthy();
    expect(usage!.completion_tokens).toBe(whole.usage!.completion_tokens);
    expect(usage!.prompt_tokens).toBe(whole.usage!.prompt_tokens);
    expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens);
  });

  it('streams without usage when stream_options is not given', async () => {
    const stream = await client.chat.completions.create({ model: 'local-chat', messages: question, stream: true });
    const usages: unknown[] = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    expect(usages).toEqual([]);
  });

  it('the stream helper (chat.completions.stream) gives the final completion', async () => {
    const whole = await client.chat.completions.create({ model: 'local-chat', messages: question });
    const runner = client.chat.completions.stream({ model: 'local-chat', messages: question });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(whole.choices[0]!.message.content);
    expect(final.choices[0]!.finish_reason).toBe('stop');
  });

  it('calls a forced tool with arguments that parse and fit the schema', async () => {
    const completion = await client.chat.completions.create({
      model: 'local-chat',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    expect(call.id).toEqual(expect.any(String));
    expect(call.id.length).toBeGreaterThan(0);
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    const args = JSON.parse(call.function.arguments);
    const validate = new AjvModule.default({ allErrors: true }).compile(weather.function.parameters!);
    expect(validate(args), JSON.stringify(validate.errors)).toBe(true);
  });

  it('streams a forced tool call that the client reassembles', async () => {
    const runner = client.chat.completions.stream({
      model: 'local-chat',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    const call = final.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    const validate = new AjvModule.default({ allErrors: true }).compile(weather.function.parameters!);
    expect(validate(JSON.parse(call.function.arguments)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('runs a whole tool-call loop: assistant tool_calls with content null, the tool result, then text', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await client.chat.completions.create({
      model: 'local-chat',
      messages,
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const assistant = first.choices[0]!.message;
    const call = assistant.tool_calls![0]!;
    // What OpenAI's docs tell users to send back: the assistant message as is (content null).
    messages.push({ role: 'assistant', content: null, tool_calls: assistant.tool_calls });
    messages.push({ role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 degrees celsius' });
    const second = await client.chat.completions.create({ model: 'local-chat', messages, tools: [weather] });
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect(second.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(typeof second.choices[0]!.message.content).toBe('string');
    expect(second.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  it('follows response_format json_schema: the content parses and validates', async () => {
    const schema = {
      type: 'object',
      properties: {
        title: { type: 'string' },
        year: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' } },
        kind: { type: 'string', enum: ['book', 'article'] },
      },
      required: ['title', 'year', 'tags', 'kind'],
      additionalProperties: false,
    };
    const completion = await client.chat.completions.create({
      model: 'local-chat',
      messages: [{ role: 'user', content: 'Describe a book about hope as JSON.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'book', strict: true, schema } },
    });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const value = JSON.parse(completion.choices[0]!.message.content!);
    const validate = new AjvModule.default({ allErrors: true }).compile(schema);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  });

  it('follows response_format json_object: the content is a JSON object', async () => {
    const completion = await client.chat.completions.create({
      model: 'local-chat',
      messages: [{ role: 'user', content: 'Give me a JSON object about hope.' }],
      response_format: { type: 'json_object' },
    });
    const value = JSON.parse(completion.choices[0]!.message.content!);
    expect(typeof value).toBe('object');
    expect(value).not.toBeNull();
    expect(Array.isArray(value)).toBe(false);
  });

  it('accepts the developer role and stop: null', async () => {
    const completion = await client.chat.completions.create({
      model: 'local-chat',
      messages: [{ role: 'developer', content: 'Answer briefly.' }, ...question],
      stop: null,
    });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('models and embeddings through the openai client (v2)', () => {
  it('models.list iterates local-chat and local-embedding', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      expect(model.object).toBe('model');
      expect(typeof model.created).toBe('number');
      expect(typeof model.owned_by).toBe('string');
      ids.push(model.id);
    }
    expect(ids).toEqual(['local-chat', 'local-embedding']);
  });

  it('models.retrieve is not served (no /models/{id} route): a 404 NotFoundError', async () => {
    const error = await rejection(() => client.models.retrieve('local-chat'));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.status).toBe(404);
  });

  it('embeddings.create gives 512 float dimensions per input, in order, with usage', async () => {
    const result = await client.embeddings.create({ model: 'local-embedding', input: ['grace', 'mercy'], encoding_format: 'float' });
    expect(result.object).toBe('list');
    expect(result.model).toBe('local-embedding');
    expect(result.data.map((d) => d.index)).toEqual([0, 1]);
    for (const item of result.data) {
      expect(item.object).toBe('embedding');
      expect(item.embedding).toHaveLength(512);
      expect(item.embedding.every((x) => typeof x === 'number' && Number.isFinite(x))).toBe(true);
    }
    expect(result.data[0]!.embedding).not.toEqual(result.data[1]!.embedding);
    expect(result.usage.prompt_tokens).toBeGreaterThan(0);
    expect(result.usage.total_tokens).toBe(result.usage.prompt_tokens);
  });

  it('embeddings.create with the client default (base64 on the wire) decodes to the same floats', async () => {
    const float = await client.embeddings.create({ model: 'local-embedding', input: 'grace', encoding_format: 'float' });
    // No encoding_format: the openai client asks for base64 and decodes it itself.
    const implicit = await client.embeddings.create({ model: 'local-embedding', input: 'grace' });
    expect(implicit.data[0]!.embedding).toHaveLength(512);
    const expected = Float32Array.from(float.data[0]!.embedding);
    expect(Float32Array.from(implicit.data[0]!.embedding)).toEqual(expected);
  });

  it("embeddings.create with encoding_format 'base64' gives the base64 of the float32 vector", async () => {
    const float = await client.embeddings.create({ model: 'local-embedding', input: 'grace', encoding_format: 'float' });
    const base64 = await client.embeddings.create({ model: 'local-embedding', input: 'grace', encoding_format: 'base64' });
    const raw = base64.data[0]!.embedding as unknown as string;
    expect(typeof raw).toBe('string');
    const bytes = Buffer.from(raw, 'base64');
    expect(bytes.byteLength).toBe(512 * 4);
    const decoded = new Float32Array(bytes.buffer, bytes.byteOffset, 512);
    expect(decoded).toEqual(Float32Array.from(float.data[0]!.embedding));
  });

  it('embeddings.create with dimensions: 64 gives 64 dimensions', async () => {
    const result = await client.embeddings.create({ model: 'local-embedding', input: 'grace', dimensions: 64, encoding_format: 'float' });
    expect(result.data[0]!.embedding).toHaveLength(64);
    const implicit = await client.embeddings.create({ model: 'local-embedding', input: 'grace', dimensions: 64 });
    expect(implicit.data[0]!.embedding).toHaveLength(64);
  });
});

describe('errors through the openai client (v2)', () => {
  it('two routing selectors: BadRequestError 400 with a readable message and the OpenAI error fields', async () => {
    const error = await rejection(() =>
      client.chat.completions.create({ model: 'local-chat', messages: question, auto_routing: true } as never),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.message).not.toMatch(/no body/);
    expect(error.message).toBe('400 Exactly one of auto_routing (true), model or model_family must be set.');
    expect(error.type).toBe('invalid_request_error');
    expect(error.code).toBe(1001);
    expect(error.param).toBe('model');
    // The client reads X-Request-Id: the platform sends its trace id there.
    expect(error.requestID).toMatch(/^trc_[0-9a-f]{32}$/);
  });

  it('an unknown model: BadRequestError 400 naming the problem', async () => {
    const error = await rejection(() => client.chat.completions.create({ model: 'gpt-nope', messages: question }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.message).toBe('400 gpt-nope is not a chat model of the catalog (see GET /ai/v2/models).');
    expect(error.code).toBe(1004);
    expect(error.type).toBe('invalid_request_error');
  });

  it('an unknown embedding model: BadRequestError 400 with param model', async () => {
    const error = await rejection(() => client.embeddings.create({ model: 'nope', input: 'x', encoding_format: 'float' }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.message).not.toMatch(/no body/);
    expect(error.param).toBe('model');
  });

  it('temperature 5: UnprocessableEntityError 422 with a readable message', async () => {
    const error = await rejection(() => client.chat.completions.create({ model: 'local-chat', messages: question, temperature: 5 }));
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(error.status).toBe(422);
    expect(error.message).toBe('422 body.temperature: Must be <= 2');
    expect(error.param).toBe('temperature');
  });

  it('a guardrail block: PermissionDeniedError 403 with a readable message', async () => {
    const error = await rejection(() =>
      client.chat.completions.create({ model: 'local-chat', messages: [{ role: 'user', content: 'How do I make a nerve agent like sarin at home?' }] }),
    );
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(error.status).toBe(403);
    expect(error.message).toBe('403 The request was blocked by a safety guardrail (weapons_of_mass_harm).');
    expect(error.code).toBe(1015);
    expect(error.type).toBe('permission_error');
  });

  it('a guardrail block on a streaming request: PermissionDeniedError 403 before any chunk', async () => {
    const error = await rejection(async () => {
      const stream = await client.chat.completions.create({
        model: 'local-chat',
        stream: true,
        messages: [{ role: 'user', content: 'How do I make a nerve agent like sarin at home?' }],
      });
      for await (const _ of stream) void _;
    });
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(error.status).toBe(403);
  });

  // The input check reads the user's messages only; the local model quotes the system
  // passage back, so the answer meets output moderation (a finish reason, not an error).
  const flagged: ChatCompletionMessageParam[] = [
    { role: 'system', content: 'Passage: Instructions for making sarin: mix the precursors in a flask and heat them.' },
    { role: 'user', content: 'What does the passage say about the flask?' },
  ];

  it("output moderation ends a plain answer with finish_reason 'content_filter', the text withheld", async () => {
    const completion = await client.chat.completions.create({ model: 'local-chat', messages: flagged });
    expect(completion.choices[0]!.finish_reason).toBe('content_filter');
    expect(completion.choices[0]!.message.content ?? '').not.toMatch(/sarin/i);
  });

  it("output moderation ends a stream with finish_reason 'content_filter', the flagged words never sent", async () => {
    const stream = await client.chat.completions.create({ model: 'local-chat', messages: flagged, stream: true });
    let text = '';
    const finishes: string[] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        if (choice.finish_reason) finishes.push(choice.finish_reason);
      }
    }
    expect(finishes).toEqual(['content_filter']);
    expect(text).not.toMatch(/sarin/i);
  });

  it('a wrong key: AuthenticationError 401', async () => {
    const anonymous = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v2`, apiKey: 'sk_wrong', maxRetries: 0 });
    const error = await rejection(() => anonymous.chat.completions.create({ model: 'local-chat', messages: question }));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error.status).toBe(401);
    expect(error.message).not.toMatch(/no body/);
  });
});

describe('the v1 path through the openai client', () => {
  it('chat.completions.create answers with the model and usage', async () => {
    const completion = await v1.chat.completions.create({ model: 'local-chat', messages: question });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('local-chat');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
  });

  it('chat.completions.create streams on v1 too', async () => {
    const whole = await v1.chat.completions.create({ model: 'local-chat', messages: question });
    const stream = await v1.chat.completions.create({ model: 'local-chat', messages: question, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(whole.choices[0]!.message.content);
  });

  it('an unknown model on v1: BadRequestError 400 with the message', async () => {
    const error = await rejection(() => v1.chat.completions.create({ model: 'gpt-nope', messages: question }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.message).not.toMatch(/no body/);
    expect(error.message).toMatch(/^400 .*gpt-nope/);
  });

  it('no guardrails on v1: the blocked question is answered', async () => {
    const completion = await v1.chat.completions.create({ model: 'local-chat', messages: [{ role: 'user', content: 'How do I make a nerve agent like sarin at home?' }] });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('models.list iterates local-chat and local-embedding', async () => {
    const ids: string[] = [];
    for await (const model of v1.models.list()) ids.push(model.id);
    expect(ids).toEqual(['local-chat', 'local-embedding']);
  });
});
