// Contract validation details (issue 9): bodies are checked without type coercion while
// query and path parameters still parse from text; `null` where a oneOf allows it; a `+`
// in a query value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

const post = (call: TestPlatform['api'], path: string, body: unknown) => call(path, { method: 'POST', body: JSON.stringify(body) });
// The test catalog's local model, so a request the contract accepts really succeeds.
const chat = (body: object) => post(platform.api, '/ai/v2/guarded/chat/completions', { model: 'local-chat', ...body });

/** A one-file upload form for ingestFiles. */
const upload = (text = 'Grace and peace.') => {
  const form = new FormData();
  form.set('publisher_id', platform.bootstrap!.publisherId);
  form.append('files', new Blob([text], { type: 'text/plain' }), 'grace.txt');
  return form;
};

describe('request bodies are not coerced', () => {
  it('refuses a number where the contract wants a string (createAgent name)', async () => {
    const res = await post(platform.mgmt, '/api/v1/agents', { name: 12345 });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.error.details[0]).toMatchObject({ loc: ['body', 'name'], type: 'string_type', input: 12345 });
  });

  it('refuses a string where the contract wants a number (search certainty)', async () => {
    const res = await post(platform.api, '/ai/v1/data/search', { query: 'rest', collection: 'GlooProd', certainty: '0.9' });
    expect(res.status).toBe(422);
    expect((await res.json()).detail[0]).toMatchObject({ loc: ['body', 'certainty'], type: 'float_type', input: '0.9' });
  });

  it('still parses query parameters from text', async () => {
    const res = await platform.mgmt('/api/v1/agents?limit=5');
    expect(res.status).toBe(200);
    const tooMany = await platform.mgmt('/api/v1/agents?limit=500');
    expect(tooMany.status).toBe(422);
    expect((await tooMany.json()).error.details[0]).toMatchObject({ loc: ['query', 'limit'], input: 500 });
  });
});

describe('findings of a big body', () => {
  const responses = (input: unknown[]) => post(platform.api, '/ai/v1/responses', { model: 'local-chat', input });
  // The input items a 422 names (its loc is body, input, index).
  const itemsNamed = (detail: { loc: string[] }[]) => new Set(detail.filter((d) => d.loc.length >= 3).map((d) => d.loc[2]));

  it('lists every invalid item of a small body', async () => {
    const res = await responses([7, 'x', 8]);
    expect(res.status).toBe(422);
    expect(itemsNamed((await res.json()).detail)).toEqual(new Set(['0', '1', '2']));
  });

  // Listing every finding costs ajv the square of their number (it copies the list to
  // append a referenced schema's findings): 8,000 invalid items held the event loop 6 s.
  it('refuses a body too big to list every finding on its first invalid item', async () => {
    const res = await responses(Array(8_000).fill('x'));
    expect(res.status).toBe(422);
    expect(itemsNamed((await res.json()).detail)).toEqual(new Set(['0']));
  });

  it('still accepts a big valid body', async () => {
    const res = await responses(Array(3_000).fill({ role: 'user', content: 'Grace.' }));
    expect(res.status).toBe(200);
  });
});

describe('null where a oneOf allows it', () => {
  it('accepts `stop: null` and an assistant message with `content: null`', async () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'done' },
      { role: 'user', content: 'and now?' },
    ];
    const res = await chat({ messages, stop: null });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] });
  });

  it('still refuses what no branch allows', async () => {
    expect((await chat({ messages: [{ role: 'user', content: 'hi' }], stop: 5 })).status).toBe(422);
    expect((await chat({ messages: [{ role: 'user', content: 12 }] })).status).toBe(422);
  });
});

describe('query strings', () => {
  it('accepts a `+` in a query value: raw it is a space (form encoding, as URLSearchParams writes one), %2B a plus', async () => {
    const publisherId = platform.bootstrap!.publisherId;
    for (const [query, producerId] of [
      ['draft+2', 'draft 2'],
      ['c%2B%2B', 'c++'],
    ]) {
      const res = await platform.api(`/ingestion/v2/files?producer_id=${query}`, { method: 'POST', body: upload(`Produced as ${query}.`) });
      expect(res.status, query).toBe(200);
      const itemId = (await res.json()).ingesting[0];
      const found = await platform.api(`/engine/v2/publisher/${publisherId}/items/by-producer`, { method: 'POST', body: JSON.stringify({ producer_ids: [producerId] }) });
      expect(found.status, query).toBe(200);
      expect(await found.json(), query).toMatchObject([{ item_id: itemId, producer_id: producerId }]);
    }
  });
});

describe('NUL and unpaired surrogates in JSON strings', () => {
  const createAgent = (raw: string) =>
    platform.mgmt('/api/v1/agents', { method: 'POST', body: raw, headers: { 'content-type': 'application/json' } });

  it('refuses an escaped NUL anywhere in the body as malformed JSON', async () => {
    const res = await createAgent('{"name":"ok","tags":["a\\u0000"]}');
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toBe('Malformed JSON body: Strings must not contain NUL (\\u0000) characters');
  });

  it('accepts the text "\\u0000" (an escaped backslash before it)', async () => {
    const res = await createAgent('{"name":"a\\\\u0000b"}');
    expect(res.status).toBe(201);
    expect((await res.json()).data.name).toBe('a\\u0000b');
  });

  // PostgreSQL stores UTF-8, which has no surrogates: a lone one was a 500 (P2007) on createResponseV1 and updateAgent.
  it('refuses an unpaired surrogate escape as malformed JSON, and keeps a paired one', async () => {
    for (const text of ['\\ud800', 'x\\udfffy', '\\ud800\\ud800', '\\udc00\\ud800']) {
      const res = await createAgent(`{"name":"${text}"}`);
      expect(res.status, text).toBe(400);
      expect((await res.json()).error.message).toBe('Malformed JSON body: Strings must not contain unpaired surrogates (\\ud800-\\udfff)');
    }
    const paired = await createAgent('{"name":"praying \\ud83d\\ude4f"}');
    expect(paired.status).toBe(201);
    expect((await paired.json()).data.name).toBe('praying \u{1F64F}');
  });
});

describe('what the fuzzer found', () => {
  it('refuses a query number that overflows to Infinity with a 422, not a 500', async () => {
    for (const limit of ['1e309', '-1e309']) {
      const res = await platform.mgmt(`/api/v1/keys?limit=${limit}`);
      expect(res.status).toBe(422);
      expect((await res.json()).error.details[0]).toMatchObject({ loc: ['query', 'limit'], type: 'finite_number' });
    }
  });

  it('refuses more passages than the contract allows with 422, not a database overflow', async () => {
    for (const path of ['/ai/v1/data/affiliates/referenced-items', '/ai/v1/data/items/recommendations/base']) {
      const res = await platform.api(path, { method: 'POST', body: '{"query":"rest","collection":"GlooProd","tenant":"default","max_snippet_count_overall":123456789012345678901234567890}' });
      expect(res.status, path).toBe(422);
      expect((await res.json()).detail[0]).toMatchObject({ loc: ['body', 'max_snippet_count_overall'], type: 'less_than_equal' });
    }
  });

  it('answers 20,000 nested arrays where a string belongs with the JSON 422, without echoing the input', async () => {
    const body = `{"scopes":${'['.repeat(20_000)}${']'.repeat(20_000)},"label":"x"}`;
    const res = await platform.mgmt('/api/v1/keys', { method: 'POST', body });
    expect(res.status).toBe(422);
    const detail = (await res.json()).error.details.find((d: { loc: string[] }) => d.loc.join('.').startsWith('body.scopes'));
    expect(detail).toBeDefined();
    expect(detail).not.toHaveProperty('input');
  });

  it("answers a broken %-escape in a path in the operation's own error shape and headers", async () => {
    const item = await platform.api('/engine/v2/items/%zz');
    expect(item.status).toBe(400);
    expect(await item.json()).toMatchObject({ detail: expect.stringContaining('%zz'), trace_id: expect.stringMatching(/^trc_/) });
    // deleteMessage is deprecated: its 400 still says so.
    const message = await platform.api('/ai/%E0%A4%A/message?message_id=5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b', { method: 'DELETE' });
    expect(message.status).toBe(400);
    expect(message.headers.get('deprecation')).toBeTruthy();
    expect(await message.json()).toHaveProperty('detail');
  });
});

describe('parameters with NUL', () => {
  it('are refused as invalid (422) before they reach the database', async () => {
    const asked = [
      await platform.api('/ingestion/v2/files?producer_id=%00', { method: 'POST', body: upload() }),
      await platform.api('/ai/v1/chat?chat_id=a%00b'),
      await platform.api('/ai/v1/message?message_id=%00', { method: 'DELETE' }),
    ];
    for (const res of asked) {
      expect(res.status, res.url).toBe(422);
      const body = await res.json();
      expect(body.detail[0]).toMatchObject({ loc: ['query', expect.any(String)], msg: 'Must not contain NUL characters' });
      expect(body.trace_id).toMatch(/^trc_/);
    }
  });
});
