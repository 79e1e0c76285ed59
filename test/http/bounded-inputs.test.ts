// Bounded inputs outside ingestion (issue 28, item 5), through the whole platform: `metadata`
// bounded as OpenAI bounds it wherever the contract takes it, bodies nested deeper than the
// documented limit refused as the operation's validation error (never a retryable 500), 422
// answers quoting a bounded part of the input, and log lines bounded whatever reaches them
// (a 9 MB metadata value, an upstream's 1 MB error text).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { MAX_BODY_DEPTH } from '../../server/http/body-depth.js';
import { QUOTE_BOUNDS } from '../../server/http/errors/render.js';
import { LOG_BOUNDS } from '../../server/logging.js';
import { logLinesOf, startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeOpenAI({ answer: 'Peace be with you.' });
  // The built-in catalog plus `upstream-chat`, served by the fake OpenAI upstream.
  const config = defaultConfig({}) as { providers: unknown[]; deployments: unknown[]; models: unknown[] };
  const catalog = buildCatalog(
    {
      ...config,
      providers: [...config.providers, { id: 'fake', type: 'openai', base_url: `${upstream.url}/v1` }],
      deployments: [...config.deployments, { id: 'd-fake', provider: 'fake', model: 'fake-model' }],
      models: [...config.models, { id: 'upstream-chat', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments: ['d-fake'] }],
    },
    'bounded inputs test',
    {},
  );
  platform = await startTestPlatform({}, { catalog });
});
afterAll(async () => {
  await platform?.close();
  await upstream?.close();
});

const post = (path: string, body: unknown) => platform.api(path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });

interface Finding {
  loc: string[];
  msg: string;
  type: string;
  input?: unknown;
}

/** The findings of a 422, in the chat/Responses (`detail`) or the management (`error.details`) shape. */
const findingsOf = (body: { detail?: Finding[]; error?: { details?: Finding[] } }): Finding[] => body.detail ?? body.error?.details ?? [];

/** Every log line of an answer is within the bound: its values, its message and pino's own fields. */
async function expectBoundedLogLines(res: Response): Promise<string[]> {
  const lines = await logLinesOf(platform, res);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line.length).toBeLessThanOrEqual(LOG_BOUNDS.total + LOG_BOUNDS.string + 500);
  return lines;
}

const hi = [{ role: 'user', content: 'hi' }];
/** Every operation whose request takes `metadata` (the contract's RequestMetadata), with an otherwise valid body. */
const TAKING_METADATA: [string, Record<string, unknown>][] = [
  ['/ai/v2/guarded/chat/completions', { model: 'local-chat', messages: hi }],
  ['/ai/v2/chat/completions', { model: 'local-chat', messages: hi }],
  ['/ai/v2/grounded/chat/completions', { model: 'local-chat', messages: hi, rag_publisher: 'default' }],
  ['/ai/v2/chat/completions/grounded', { model: 'local-chat', messages: hi, rag_publisher: 'default' }],
  ['/ai/v2/code-assist/chat/completions', { model: 'local-chat', messages: hi }],
  ['/ai/v1/chat/completions', { model: 'local-chat', messages: hi }],
  ['/ai/v2/guarded/responses', { model: 'local-chat', input: 'hi' }],
  ['/ai/v2/responses', { model: 'local-chat', input: 'hi' }],
  ['/ai/v1/responses', { model: 'local-chat', input: 'hi' }],
  ['/ai/v1/grounded/responses', { model: 'local-chat', input: 'hi', rag_publisher: 'default' }],
];

describe('metadata, bounded as OpenAI bounds it', () => {
  const pairs = (count: number, keyLength = 8, valueLength = 8) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [`${i}`.padStart(keyLength, 'k'), 'v'.repeat(valueLength)]));
  const breaches: [string, Record<string, string>, string[], RegExp][] = [
    ['17 pairs', pairs(17), ['body', 'metadata'], /more than 16 properties/],
    ['a 65-character key', pairs(1, 65), ['body', 'metadata'], /^Property name must NOT have more than 64 characters$/],
    ['a 513-character value', { note: 'v'.repeat(513) }, ['body', 'metadata', 'note'], /more than 512 characters/],
  ];

  it.each(TAKING_METADATA)('%s refuses each breach with its validation error naming the field', async (path, body) => {
    for (const [name, metadata, loc, msg] of breaches) {
      const res = await post(path, { ...body, metadata });
      expect(res.status, `${path}: ${name}`).toBe(422);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const findings = findingsOf(await res.json());
      expect(findings, `${path}: ${name}`).toContainEqual(expect.objectContaining({ loc, msg: expect.stringMatching(msg) }));
    }
  });

  it('accepts 16 pairs of 64-character keys and 512-character values, and echoes them', async () => {
    const metadata = pairs(16, 64, 512);
    const response = await post('/ai/v2/responses', { model: 'local-chat', input: 'hi', metadata });
    expect(response.status, await response.clone().text()).toBe(200);
    expect((await response.json()).metadata).toEqual(metadata);
    const chat = await post('/ai/v2/guarded/chat/completions', { model: 'local-chat', messages: hi, metadata });
    expect(chat.status, await chat.clone().text()).toBe(200);
  });

  it('refuses a 9 MB value with a small answer and small log lines', async () => {
    const res = await post('/ai/v2/responses', { model: 'local-chat', input: 'hi', metadata: { note: 'x'.repeat(9_000_000) } });
    expect(res.status).toBe(422);
    const text = await res.clone().text();
    expect(text.length).toBeLessThan(2_000);
    const [finding] = findingsOf(JSON.parse(text));
    expect(finding).toMatchObject({ loc: ['body', 'metadata', 'note'], type: 'string_too_long' });
    expect(finding.input).toMatch(/^x+…$/);
    await expectBoundedLogLines(res);
  });
});

describe(`bodies nested deeper than ${MAX_BODY_DEPTH} levels`, () => {
  /** A JSON schema of objects nested `depth` deep (two JSON levels each: properties, then the property). */
  const nestedSchema = (depth: number) => '{"type":"object","properties":{"a":'.repeat(depth) + '{"type":"string"}' + '}}'.repeat(depth);

  it('answers tool parameters nested 10,000 deep with the validation error naming the limit, not a retryable 500', async () => {
    const deep = nestedSchema(10_000);
    const asked = [
      ['/ai/v2/guarded/chat/completions', `{"model":"local-chat","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`, ['body', 'tools', '0', 'function', 'parameters']],
      ['/ai/v2/responses', `{"model":"local-chat","input":"hi","tools":[{"type":"function","name":"f","parameters":${deep}}]}`, ['body', 'tools', '0', 'parameters']],
      ['/ai/v2/responses', `{"model":"local-chat","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":${deep}}}}`, ['body', 'text', 'format', 'schema']],
    ] as const;
    for (const [path, body, where] of asked) {
      const res = await post(path, body);
      expect(res.status, path).toBe(422);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const [finding] = findingsOf(await res.json());
      expect(finding).toMatchObject({ type: 'too_deep', msg: `Must NOT nest arrays and objects more than ${MAX_BODY_DEPTH} levels deep` });
      expect(finding.loc.slice(0, where.length)).toEqual(where);
      expect(finding.loc).toHaveLength(MAX_BODY_DEPTH + 1);
      expect(finding).not.toHaveProperty('input');
    }
  });

  it('still answers a tool schema nested well within the limit', async () => {
    const body = `{"model":"local-chat","messages":[{"role":"user","content":"call f please"}],"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":${nestedSchema(20)}}}]}`;
    const res = await post('/ai/v2/guarded/chat/completions', body);
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await res.json()).choices[0].finish_reason).toBe('tool_calls');
  });

  it('refuses the limit plus one, in every shape of validation error', async () => {
    const overLimit = '['.repeat(MAX_BODY_DEPTH) + ']'.repeat(MAX_BODY_DEPTH);
    const atLimit = '['.repeat(MAX_BODY_DEPTH - 1) + ']'.repeat(MAX_BODY_DEPTH - 1);
    // The body is the first level: a value at the limit holds MAX_BODY_DEPTH - 1 levels.
    const embeddings = await post('/ai/v2/direct/embeddings', `{"model":"local-embedding","input":"hi","extra":${overLimit}}`);
    expect(embeddings.status).toBe(422);
    expect((await embeddings.json()).detail).toMatchObject({ code: 'too_deep', message: expect.stringContaining(`${MAX_BODY_DEPTH} levels`) });
    const agent = await platform.mgmt('/api/v1/agents', { method: 'POST', body: `{"name":"deep","extra":${overLimit}}` });
    expect(agent.status).toBe(422);
    expect((await agent.json()).error.details[0]).toMatchObject({ type: 'too_deep', loc: expect.arrayContaining(['body', 'extra']) });
    const within = await platform.mgmt('/api/v1/agents', { method: 'POST', body: `{"name":"deep","extra":${atLimit}}` });
    expect(within.status, await within.clone().text()).toBe(201);
  });
});

describe('422 answers quote a bounded part of the input', () => {
  const quoted = (input: unknown) => JSON.stringify(input).length;

  it('quotes a 100,000-element array as its first elements, still an array', async () => {
    const res = await post('/ai/v2/responses', { model: 'local-chat', input: Array(100_000).fill(1) });
    expect(res.status).toBe(422);
    const text = await res.clone().text();
    expect(text.length).toBeLessThan(4_000);
    const findings = findingsOf(JSON.parse(text));
    const whole = findings.find((f) => f.loc.join('.') === 'body.input')!;
    expect(Array.isArray(whole.input)).toBe(true);
    expect((whole.input as number[]).slice(0, 3)).toEqual([1, 1, 1]);
    expect(quoted(whole.input)).toBeLessThanOrEqual(QUOTE_BOUNDS.total + 32);
  });

  it('quotes a long string cut and marked, and keeps the management shape bounded too', async () => {
    const chat = await post('/ai/v2/guarded/chat/completions', { model: 'local-chat', messages: 'm'.repeat(100_000) });
    expect(chat.status).toBe(422);
    const [finding] = findingsOf(await chat.json());
    expect(finding.input).toMatch(/^m+…$/);
    expect(quoted(finding.input)).toBe(QUOTE_BOUNDS.total);
    const key = await platform.mgmt('/api/v1/keys', { method: 'POST', body: JSON.stringify({ scopes: Array(100_000).fill('inference'), label: 7 }) });
    expect(key.status).toBe(422);
    const text = await key.text();
    expect(text.length).toBeLessThan(4_000);
    for (const detail of findingsOf(JSON.parse(text))) expect(quoted(detail.input ?? null)).toBeLessThanOrEqual(QUOTE_BOUNDS.total + 32);
  });
});

describe('log lines', () => {
  it("carry an upstream's 1 MB error text cut to the bound", async () => {
    upstream.faults.push({ type: 'bad_request', message: `Invalid value: ${'e'.repeat(1_000_000)}` });
    const res = await post('/ai/v2/guarded/chat/completions', { model: 'upstream-chat', messages: hi });
    expect(res.status).toBe(400);
    expect((await res.clone().json()).error.message).toBe('The model provider rejected the request.');
    const lines = await expectBoundedLogLines(res);
    const failed = lines.map((line) => JSON.parse(line)).find((line) => line.msg === 'upstream call failed');
    expect(failed.err.message).toMatch(/^upstream 400: Invalid value: e+…$/);
  });
});
