// Tool calls and response_format answers must validate against the caller's schemas.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import type { ChatRequest, ToolDefinition } from '../../../server/providers/types.js';
import { ask, collect, ctx, provider, request } from './support.js';

const ajv = new Ajv2020.default({ strict: false, allErrors: true });
addFormats.default(ajv);

function expectValid(schema: Record<string, unknown>, value: unknown) {
  const validate = ajv.compile(schema);
  expect(validate(value), JSON.stringify({ value, errors: validate.errors })).toBe(true);
}

const weather: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 2 },
        unit: { type: 'string', enum: ['fahrenheit', 'celsius'] },
        days: { type: 'integer', minimum: 1, maximum: 7 },
        detailed: { type: 'boolean' },
      },
      required: ['city', 'unit', 'days'],
      additionalProperties: false,
    },
  },
};
const searchDocs: ToolDefinition = {
  type: 'function',
  function: {
    name: 'search_docs',
    description: 'Search the product documentation',
    parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer', exclusiveMinimum: 0, multipleOf: 5 } }, required: ['query', 'limit'] },
  },
};
const createTicket: ToolDefinition = {
  type: 'function',
  function: {
    name: 'create_ticket',
    parameters: {
      type: 'object',
      $defs: { person: { type: 'object', properties: { email: { type: 'string', format: 'email' }, name: { type: 'string' } }, required: ['email'] } },
      properties: {
        title: { type: 'string', maxLength: 10 },
        priority: { type: ['string', 'null'], enum: ['low', 'high', null] },
        reporter: { $ref: '#/$defs/person' },
        labels: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 2, maxItems: 3 },
        due: { type: 'string', format: 'date' },
        estimate: { anyOf: [{ type: 'number', minimum: 0.5, maximum: 0.75 }, { type: 'string' }] },
      },
      required: ['title', 'priority', 'reporter', 'labels', 'due', 'estimate'],
    },
  },
};
const tools = [weather, searchDocs, createTicket];

async function onlyCall(req: ChatRequest) {
  const result = await provider.chat(req, ctx());
  expect(result.finishReason).toBe('tool_calls');
  expect(result.content).toBeNull();
  expect(result.toolCalls).toHaveLength(1);
  return result.toolCalls![0];
}

describe('tool calls', () => {
  it('calls the named tool with schema-valid arguments taken from the message', async () => {
    const call = await onlyCall(ask('What is the weather in city of San Francisco, unit: celsius?', { tools, toolChoice: { type: 'function', function: { name: 'get_weather' } } }));
    expect(call.function.name).toBe('get_weather');
    expect(call.id).toMatch(/^call_[0-9a-f]{16}$/);
    const args = JSON.parse(call.function.arguments);
    expectValid(weather.function.parameters!, args);
    expect(args).toMatchObject({ city: 'San Francisco', unit: 'celsius' });
  });

  it('produces valid arguments for every tool when forced, whatever the message', async () => {
    for (const tool of tools) {
      const call = await onlyCall(ask('hi', { tools, toolChoice: { type: 'function', function: { name: tool.function.name } } }));
      expectValid(tool.function.parameters!, JSON.parse(call.function.arguments));
    }
  });

  it("with 'required' picks the best-matching tool, with 'auto' only when clearly asked", async () => {
    const required = await onlyCall(ask('Search the documentation for rate limits', { tools, toolChoice: 'required' }));
    expect(required.function.name).toBe('search_docs');
    expect(JSON.parse(required.function.arguments).query).toBe('Search the documentation for rate limits');
    const auto = await onlyCall(ask('How is the weather today?', { tools }));
    expect(auto.function.name).toBe('get_weather');
    const plain = await provider.chat(ask('Tell me a joke', { tools }), ctx());
    expect(plain.finishReason).toBe('stop');
    expect(plain.toolCalls).toBeUndefined();
    const none = await provider.chat(ask('How is the weather today?', { tools, toolChoice: 'none' }), ctx());
    expect(none.finishReason).toBe('stop');
  });

  it('keeps ids stable for the same request', async () => {
    const req = ask('weather please', { tools, toolChoice: 'required' });
    expect((await onlyCall(req)).id).toBe((await onlyCall(req)).id);
  });

  it('streams one delta with id and name, then argument fragments, then finish tool_calls', async () => {
    const req = ask('weather in city Oslo', { tools, toolChoice: 'required' });
    const call = await onlyCall(req);
    const events = await collect(provider.chatStream(req, ctx()));
    const deltas = events.flatMap((e) => (e.type === 'delta' ? (e.toolCalls ?? []) : []));
    expect(deltas[0]).toEqual({ index: 0, id: call.id, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(deltas.slice(1).every((d) => d.id === undefined && d.function?.name === undefined)).toBe(true);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.map((d) => d.function?.arguments ?? '').join('')).toBe(call.function.arguments);
    expect(events.filter((e) => e.type === 'finish')).toEqual([{ type: 'finish', finishReason: 'tool_calls', usage: expect.any(Object) }]);
  });

  it('answers in text after a tool result, so a tool loop ends', async () => {
    const req = request(
      [
        { role: 'user', content: 'weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 4, "sky": "overcast"}' },
      ],
      { tools, toolChoice: 'auto' },
    );
    const result = await provider.chat(req, ctx());
    expect(result.finishReason).toBe('stop');
    expect(result.toolCalls).toBeUndefined();
    expect(result.content).toContain('get_weather returned: {"temperature": 4, "sky": "overcast"}');
  });

  it('rejects a named tool_choice that is not among the tools as a bad request', async () => {
    await expect(provider.chat(ask('hi', { tools, toolChoice: { type: 'function', function: { name: 'nope' } } }), ctx())).rejects.toMatchObject({ kind: 'bad_request' });
  });
});

describe('response_format', () => {
  it('json_object answers with a JSON object', async () => {
    const result = await provider.chat(ask('What does hope mean? Reply in JSON.', { responseFormat: { type: 'json_object' } }), ctx());
    const value = JSON.parse(result.content!);
    expect(value).toBeTypeOf('object');
    expect(value.answer).toMatch(/built-in local model/);
  });

  const schemas: Record<string, Record<string, unknown>> = {
    flat: { type: 'object', properties: { answer: { type: 'string' }, confidence: { type: 'number', minimum: 0, maximum: 1 } }, required: ['answer', 'confidence'], additionalProperties: false },
    nested: {
      type: 'object',
      properties: {
        person: { type: 'object', properties: { name: { type: 'string', minLength: 3 }, age: { type: 'integer', minimum: 18 } }, required: ['name', 'age'] },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1 },
      },
      required: ['person', 'tags'],
    },
    optional: { type: 'object', properties: { title: { type: 'string' }, note: { type: 'string', minLength: 50 } }, required: ['title'] },
    arrayOfObjects: {
      type: 'object',
      properties: { steps: { type: 'array', minItems: 2, items: { type: 'object', properties: { n: { type: 'integer', exclusiveMinimum: 3, multipleOf: 2 }, done: { type: 'boolean' } }, required: ['n', 'done'] } } },
      required: ['steps'],
    },
    enumsAndConst: { type: 'object', properties: { kind: { const: 'report' }, level: { enum: [3, 5] }, score: { type: 'number', exclusiveMaximum: -2 } }, required: ['kind', 'level', 'score'] },
    allOf: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'integer', maximum: -5 } }, required: ['b'] }] },
  };

  for (const [name, schema] of Object.entries(schemas)) {
    it(`json_schema answers validate: ${name}`, async () => {
      const result = await provider.chat(ask('Summarise the meaning of hope, title Hope', { responseFormat: { type: 'json_schema', json_schema: { name, schema } } }), ctx());
      expect(result.finishReason).toBe('stop');
      expectValid(schema, JSON.parse(result.content!));
    });
  }

  it('fills free-text fields with the answer and named fields from the message', async () => {
    const result = await provider.chat(ask('Summarise the meaning of hope, title Hope', { responseFormat: { type: 'json_schema', json_schema: { name: 'x', schema: schemas.optional } } }), ctx());
    expect(JSON.parse(result.content!)).toEqual({ title: 'Hope' });
    const flat = JSON.parse((await provider.chat(ask('What is hope?', { responseFormat: { type: 'json_schema', json_schema: { name: 'x', schema: schemas.flat } } }), ctx())).content!);
    expect(flat.answer).toMatch(/built-in local model/);
  });
});
