// The Responses API over HTTP on the built-in local provider: every output type (message,
// refusal-free text, function calls, image generation), text formats, incomplete answers,
// built-in tools refused by name, guardrails and tradition on v2, direct access on v1,
// the canonical path and its alias, stored conversations (previous_response_id) per
// organization, kept for RESPONSE_RETENTION_DAYS. Every JSON body is checked against the
// contract.
import { randomUUID } from 'node:crypto';
import AjvModule from 'ajv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { drawPromptPng } from '../../server/providers/local/image.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { meter, type UsageAdded } from '../support/usage.js';
import { catalogCost, catalogOf, pricedDefaultCatalog, readEvents } from './support.js';

let platform: TestPlatform;
let otherOrgKey: string;

beforeAll(async () => {
  // local-chat priced: the metering tests check each call's cost.
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedDefaultCatalog() });
  const { identity } = platform.services;
  const other = await identity.organizations.createOrganization(`other-${randomUUID()}`);
  otherOrgKey = (await identity.keys.issue(other.id, { scopes: ['inference'] })).plaintext;
}, 120_000);
afterAll(() => platform?.close());

const post = (path: string, body: unknown, key?: string) => platform.api(path, { method: 'POST', body: JSON.stringify(body), ...(key ? { key } : {}) });
const create = (body: unknown, key?: string) => post('/ai/v2/guarded/responses', body, key);

async function ok(res: Response, operation: 'createResponse' | 'createResponseAlias' | 'createResponseV1' = 'createResponse') {
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(contractProblems(operation, 200, body)).toEqual([]);
  return body;
}

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'The current weather of a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

describe('plain answers', () => {
  it('a string input: one completed message, output_text, usage that adds up, routing facts', async () => {
    const body = await ok(await create({ model: 'local-chat', input: 'What does hope mean?', metadata: { ticket: 'T-1' } }));
    expect(body).toMatchObject({ object: 'response', status: 'completed', model: 'local-chat', provider: 'local', routing_mechanism: 'direct_model_selection', tradition: null, incomplete_details: null, error: null, metadata: { ticket: 'T-1' } });
    expect(body.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(body.output).toHaveLength(1);
    const [message] = body.output;
    expect(message).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(message.id).toMatch(/^msg_/);
    expect(message.content).toHaveLength(1);
    expect(message.content[0].type).toBe('output_text');
    expect(message.content[0].text).toContain('What does hope mean?');
    expect(body.output_text).toBe(message.content[0].text);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.output_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);
  });

  it('typed input items with instructions: the answer is drawn from the conversation', async () => {
    const body = await ok(
      await create({
        model: 'local-chat',
        instructions: 'Answer from the passage.',
        input: [
          { role: 'developer', content: 'Passage: The lighthouse keeper lit the lamp every evening at dusk.' },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'When did the keeper light the lamp?' }] },
        ],
      }),
    );
    expect(body.instructions).toBe('Answer from the passage.');
    expect(body.output_text).toContain('The lighthouse keeper lit the lamp every evening at dusk.');
  });

  it('output items of an earlier response sent back as input (reasoning, message, image) are accepted as history', async () => {
    const body = await ok(
      await create({
        model: 'local-chat',
        input: [
          { role: 'user', content: 'Passage: The bells ring at noon on Sundays.' },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thinking.' }], encrypted_content: null },
          { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Noted.', annotations: [] }, { type: 'refusal', refusal: 'No.' }] },
          { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: 'aW1hZ2U=' },
          { role: 'user', content: 'When do the bells ring?' },
        ],
      }),
    );
    expect(body.output_text).toContain('The bells ring at noon on Sundays.');
  });

  it('an inline text file is read into the prompt; a PDF is refused naming the part', async () => {
    const file = { type: 'input_file', filename: 'notes.txt', file_data: `data:text/plain;base64,${Buffer.from('The harvest festival starts on the first Sunday of October.').toString('base64')}` };
    const body = await ok(await create({ model: 'local-chat', input: [{ role: 'user', content: [file, { type: 'input_text', text: 'When does the harvest festival start?' }] }] }));
    expect(body.output_text).toContain('first Sunday of October');
    const pdf = await create({ model: 'local-chat', input: [{ role: 'user', content: [{ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }] }] });
    expect(pdf.status).toBe(400);
    expect((await pdf.json()).error).toMatchObject({ name: 'INVALID_REQUEST', param: 'input[0].content[0].file_data' });
  });

  it('max_output_tokens cuts the answer: status incomplete, reason max_output_tokens', async () => {
    const body = await ok(await create({ model: 'local-chat', input: 'What does hope mean?', max_output_tokens: 5 }));
    expect(body.status).toBe('incomplete');
    expect(body.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(body.output[0].status).toBe('incomplete');
    expect(body.usage.output_tokens).toBeLessThanOrEqual(5);
  });

  it('text.format json_schema (strict): the text parses and validates; json_object gives an object', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' }, year: { type: 'integer' } }, required: ['title', 'year'], additionalProperties: false };
    const body = await ok(await create({ model: 'local-chat', input: 'Describe a book about hope.', text: { format: { type: 'json_schema', name: 'book', strict: true, schema } } }));
    const validate = new AjvModule.default().compile(schema);
    expect(validate(JSON.parse(body.output_text)), JSON.stringify(validate.errors)).toBe(true);
    const object = await ok(await create({ model: 'local-chat', input: 'Hope as JSON.', text: { format: { type: 'json_object' } } }));
    expect(typeof JSON.parse(object.output_text)).toBe('object');
  });
});

describe('tools', () => {
  it('a forced function tool: a function_call item with call_id and JSON arguments', async () => {
    const body = await ok(await create({ model: 'local-chat', input: 'What is the weather? city: Paris', tools: [weather], tool_choice: { type: 'function', name: 'get_weather' } }));
    expect(body.status).toBe('completed');
    expect(body.output).toHaveLength(1);
    const [call] = body.output;
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
    expect(call.id).toMatch(/^fc_/);
    expect(call.call_id).toMatch(/^call_/);
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Paris' });
    expect(body.output_text).toBe('');
  });

  it('the tool loop: the call and its output sent back give a text answer using the result', async () => {
    const first = await ok(await create({ model: 'local-chat', input: 'What is the weather? city: Paris', tools: [weather], tool_choice: 'required' }));
    const call = first.output[0];
    const second = await ok(
      await create({
        model: 'local-chat',
        tools: [weather],
        input: [{ role: 'user', content: 'What is the weather? city: Paris' }, call, { type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 degrees' }],
      }),
    );
    expect(second.output[0].type).toBe('message');
    expect(second.output_text).toContain('get_weather returned: Sunny, 21 degrees');
  });

  it.each(['web_search', 'file_search', 'code_interpreter', 'web_search_preview_2025_03_11', 'web_search_2025_08_26', 'computer_use_preview'])('the built-in %s tool is a 400 naming it, before any model call', async (type) => {
    const res = await create({ model: 'local-chat', input: 'Look it up.', tools: [{ type }] });
    const body = await res.json();
    expect(res.status).toBe(400);
    expect(contractProblems('createResponse', 400, body)).toEqual([]);
    expect(body.error).toMatchObject({ name: 'INVALID_REQUEST', param: 'tools[0]' });
    expect(body.error.message).toContain(`The ${type} tool`);
  });
});

describe('what the platform does not run', () => {
  it.each(['web_search_preview', 'web_search_preview_2025_03_11', 'file_search', 'allowed_tools'])('tool_choice %s is a 400 naming it', async (type) => {
    const res = await create({ model: 'local-chat', input: 'Look it up.', tools: [weather], tool_choice: { type } });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(contractProblems('createResponse', 400, body)).toEqual([]);
    expect(body.error).toMatchObject({ name: 'INVALID_REQUEST', param: 'tool_choice' });
    expect(body.error.message).toContain(`tool_choice ${type}`);
  });

  it('background: true is a 400 saying so (never silently answered in the foreground)', async () => {
    const res = await create({ model: 'local-chat', input: 'Take your time.', background: true });
    const body = await res.json();
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ name: 'INVALID_REQUEST', param: 'background' });
    expect(body.error.message).toContain('background mode is not supported');
    await ok(await create({ model: 'local-chat', input: 'Take your time.', background: false }));
  });

  it('a function tool without a name is still a 422 naming the field', async () => {
    const res = await create({ model: 'local-chat', input: 'Hi.', tools: [{ type: 'function', parameters: {} }] });
    expect(res.status).toBe(422);
    expect(JSON.stringify((await res.json()).detail)).toContain('tools');
  });
});

describe('image generation', () => {
  it('the image_generation tool returns an image_generation_call with the local PNG in base64', async () => {
    const body = await ok(await create({ model: 'local-chat', input: 'Draw a lighthouse at dawn.', tools: [{ type: 'image_generation' }], tool_choice: { type: 'image_generation' } }));
    expect(body.status).toBe('completed');
    const images = body.output.filter((item: { type: string }) => item.type === 'image_generation_call');
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ status: 'completed' });
    expect(images[0].id).toMatch(/^ig_/);
    const png = Buffer.from(images[0].result, 'base64');
    expect(png.subarray(1, 4).toString('ascii')).toBe('PNG');
    // The model's prompt is the user's request (the local model fills `prompt` with it).
    expect(png.equals(drawPromptPng('Draw a lighthouse at dawn.'))).toBe(true);
    expect(body.output.some((item: { type: string }) => item.type === 'function_call')).toBe(false);
  });
});

describe('image generation on a model without it', () => {
  let plain: TestPlatform;
  beforeAll(async () => {
    const catalog = catalogOf({
      deployments: [{ id: 'plain', provider: 'local', model: 'local-chat' }],
      models: [{ id: 'plain-chat', family: 'local', context_window: 8_000, max_output_tokens: 1_000, capabilities: { tools: true }, deployments: ['plain'] }],
    });
    plain = await startTestPlatform({ logLevel: 'silent' }, { catalog });
  }, 120_000);
  afterAll(() => plain?.close());

  it('is 400 UNSUPPORTED_MODEL before any upstream call', async () => {
    const res = await plain.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'plain-chat', input: 'Draw a cat.', tools: [{ type: 'image_generation' }] }) });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ name: 'UNSUPPORTED_MODEL', message: 'plain-chat does not support the image_generation tool.' });
  });
});

describe('vision on a model without it', () => {
  it('an image part to local-chat is 400 UNSUPPORTED_MODEL', async () => {
    const res = await create({ model: 'local-chat', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.org/cat.png' }, { type: 'input_text', text: 'What is this?' }] }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ name: 'UNSUPPORTED_MODEL', message: 'local-chat does not accept image input.' });
  });

  it('an image URL that is neither https nor a base64 data URL is 400 naming the field', async () => {
    const res = await create({ model: 'local-chat', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'ftp://example.org/cat.png' }] }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ name: 'INVALID_REQUEST', param: 'input[0].content[0].image_url' });
  });
});

describe('v2 rules: routing selectors, guardrails, tradition', () => {
  it('two routing selectors, or none, are 400 ROUTING_SELECTOR_INVALID', async () => {
    for (const selectors of [{ model: 'local-chat', auto_routing: true }, {}]) {
      const res = await create({ ...selectors, input: 'Hi there.' });
      expect(res.status).toBe(400);
      expect((await res.json()).error.name).toBe('ROUTING_SELECTOR_INVALID');
    }
  });

  it('auto-routing and tradition are reported', async () => {
    const body = await ok(await create({ auto_routing: true, tradition: 'catholic', input: 'What does hope mean?' }));
    expect(body).toMatchObject({ routing_mechanism: 'auto_routing', tradition: 'catholic', model: 'local-chat' });
  });

  it('a hard guardrail match is 403 GUARDRAIL_BLOCKED', async () => {
    const res = await create({ model: 'local-chat', input: 'How do I make a nerve agent like sarin at home?' });
    const body = await res.json();
    expect(res.status).toBe(403);
    expect(contractProblems('createResponse', 403, body)).toEqual([]);
    expect(body.error.name).toBe('GUARDRAIL_BLOCKED');
  });

  it('moderated output ends the response incomplete (content_filter), the text withheld', async () => {
    const body = await ok(
      await create({
        model: 'local-chat',
        input: [
          { role: 'system', content: 'Passage: Instructions for making sarin: mix the precursors in a flask and heat them.' },
          { role: 'user', content: 'What does the passage say about the flask?' },
        ],
      }),
    );
    expect(body.status).toBe('incomplete');
    expect(body.incomplete_details).toEqual({ reason: 'content_filter' });
    expect(JSON.stringify(body.output)).not.toMatch(/sarin/i);
  });

  it('no user message is 400 NO_USER_MESSAGE', async () => {
    const res = await create({ model: 'local-chat', input: [{ role: 'system', content: 'Be brief.' }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error.name).toBe('NO_USER_MESSAGE');
  });
});

describe('paths', () => {
  it('/ai/v2/responses is the alias: same answer shape, Deprecation and a successor Link', async () => {
    const res = await post('/ai/v2/responses', { model: 'local-chat', input: 'What does hope mean?' });
    expect(res.headers.get('deprecation')).toBeTruthy();
    expect(res.headers.get('link')).toBe('</ai/v2/guarded/responses>; rel="successor-version"');
    const body = await ok(res, 'createResponseAlias');
    expect(body.status).toBe('completed');
  });

  it('the canonical path carries no Deprecation header', async () => {
    const res = await create({ model: 'local-chat', input: 'Hi there.' });
    expect(res.headers.get('deprecation')).toBeNull();
    await ok(res);
  });

  it('v1: direct model access without guardrails, with Deprecation headers', async () => {
    const res = await post('/ai/v1/responses', { model: 'local-chat', input: 'How do I make a nerve agent like sarin at home?' });
    expect(res.headers.get('deprecation')).toBeTruthy();
    expect(res.headers.get('link')).toBe('</ai/v2/guarded/responses>; rel="successor-version"');
    const body = await ok(res, 'createResponseV1');
    expect(body).toMatchObject({ status: 'completed', tradition: null, routing_mechanism: 'direct_model_selection' });
  });
});

describe('previous_response_id', () => {
  it('continues a stored conversation: the earlier input is context for the follow-up', async () => {
    const first = await ok(await create({ model: 'local-chat', input: [{ role: 'system', content: 'Passage: The choir rehearses every Thursday at seven.' }, { role: 'user', content: 'Hello there, friend.' }] }));
    const second = await ok(await create({ model: 'local-chat', previous_response_id: first.id, input: 'When does the choir rehearse?' }));
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output_text).toContain('The choir rehearses every Thursday at seven.');
    // A chain: the third turn still sees the first turn's passage.
    const third = await ok(await create({ model: 'local-chat', previous_response_id: second.id, input: 'Which day does the choir rehearse?' }));
    expect(third.output_text).toContain('Thursday');
  });

  it("another organization's id is 404, as is an unknown one", async () => {
    const first = await ok(await create({ model: 'local-chat', input: 'Hello there, friend.' }));
    for (const [id, key] of [
      [first.id, otherOrgKey],
      ['resp_unknown', undefined],
    ] as const) {
      const res = await create({ model: 'local-chat', previous_response_id: id, input: 'And then?' }, key);
      const body = await res.json();
      expect(res.status).toBe(404);
      expect(contractProblems('createResponse', 404, body)).toEqual([]);
      expect(body.error).toMatchObject({ name: 'NOT_FOUND', param: 'previous_response_id' });
    }
  });

  it('store: false keeps nothing to continue', async () => {
    const first = await ok(await create({ model: 'local-chat', input: 'Hello there, friend.', store: false }));
    const res = await create({ model: 'local-chat', previous_response_id: first.id, input: 'And then?' });
    expect(res.status).toBe(404);
  });

  it('a store that fails does not fail the answer (made and billed): JSON and stream complete, only the follow-up is 404', async () => {
    const store = (platform.services.responses as unknown as { store: { save: (...args: unknown[]) => Promise<void> } }).store;
    const save = store.save;
    store.save = async () => {
      throw new Error('the database is away');
    };
    try {
      const plain = await ok(await create({ model: 'local-chat', input: 'Hello there, friend.' }));
      expect(plain.status).toBe('completed');
      const streamed = await create({ model: 'local-chat', input: 'Hello there, friend.', stream: true });
      expect(streamed.status).toBe(200);
      const text = await streamed.text();
      expect(text).toContain('event: response.completed');
      expect(text).not.toContain('event: error');
      expect((await create({ model: 'local-chat', previous_response_id: plain.id, input: 'And then?' })).status).toBe(404);
    } finally {
      store.save = save;
    }
  });
});

describe('retention', () => {
  const DAYS = 2;
  let kept: TestPlatform;
  beforeAll(async () => {
    kept = await startTestPlatform({ logLevel: 'silent', responseRetentionMs: loadConfig({ RESPONSE_RETENTION_DAYS: String(DAYS) }).responseRetentionMs });
  }, 120_000);
  afterAll(() => kept?.close());
  const respond = (body: Record<string, unknown>) => kept.api('/ai/v2/guarded/responses', { method: 'POST', body: JSON.stringify({ model: 'local-chat', ...body }) });

  it('a stored response expires RESPONSE_RETENTION_DAYS after it was made; then previous_response_id is 404', async () => {
    const before = Date.now();
    const first = await ok(await respond({ input: 'Hello there, friend.' }));
    const after = Date.now();
    const { expiresAt } = await kept.services.database.prisma.storedResponse.findUniqueOrThrow({ where: { id: first.id } });
    const retentionMs = DAYS * 24 * 60 * 60 * 1000;
    expect(expiresAt.getTime()).toBeGreaterThanOrEqual(before + retentionMs);
    expect(expiresAt.getTime()).toBeLessThanOrEqual(after + retentionMs);
    // The platform's clock moved to either side of the expiry (only Date: timers run as usual).
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(expiresAt.getTime() - 60_000);
      await ok(await respond({ previous_response_id: first.id, input: 'And then?' }));
      vi.setSystemTime(expiresAt.getTime() + 1_000);
      const res = await respond({ previous_response_id: first.id, input: 'And then?' });
      const body = await res.json();
      expect(res.status).toBe(404);
      expect(body.error).toMatchObject({ name: 'NOT_FOUND', param: 'previous_response_id' });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('metering', () => {
  it('a response and a streamed response each record their upstream usage and its catalog cost', async () => {
    const where = { organizationId: platform.bootstrap!.organizationId, operation: 'createResponse', model: 'local-chat', provider: 'local' };
    const expectMetered = async (added: UsageAdded, { input_tokens: inputTokens, output_tokens: outputTokens }: { input_tokens: number; output_tokens: number }) => {
      const cost = catalogCost(platform.services.inference.gateway.catalog, 'local-chat', inputTokens, outputTokens);
      expect(cost).toBeGreaterThan(0n);
      expect(added).toEqual({ calls: 1, inputTokens, outputTokens, costMicros: cost, billedMicros: cost });
    };
    const plain = await meter(platform, where);
    const { usage } = await ok(await create({ model: 'local-chat', input: 'What does hope mean?' }));
    await expectMetered(await plain.added(1), usage);
    const streamed = await meter(platform, where);
    const events = await readEvents(await create({ model: 'local-chat', input: 'What is patience?', stream: true }));
    await expectMetered(await streamed.added(1), events.find((e) => e.event === 'response.completed')!.data.response.usage);
  });
});
