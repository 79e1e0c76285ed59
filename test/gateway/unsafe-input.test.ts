// Nothing unsafe passes through the gateway, end to end against fake upstreams: image URLs
// an upstream would fetch (file:, gopher:, the management port on loopback, private and
// link-local hosts in any disguise) are refused with a 400 before any upstream call, on
// chat completions v1 and v2 and the Responses API; an upstream error that echoes the
// provider key reaches neither the logs nor the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../../mocks/upstreams/fake-anthropic.js';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog } from '../../server/gateway/catalog.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { logLinesOf, startTestPlatform, type TestPlatform } from '../support/platform.js';
import { BAD_SCHEMES, PRIVATE_URLS, readStream } from './support.js';

// A key of OpenAI's shape, and one of no recognisable shape (Azure's are 32 hex characters).
const OPENAI_KEY = 'sk-proj-Zq8vN3xLw0Tt5Rk2Jm9Hd4Yb7Gc1Fe6';
const AZURE_KEY = '4f9c2a7e1b8d3f6a0c5e9b2d7a4f1c8e';
const CLAUDE_KEY = 'sk-ant-api03-Qw7Er4Ty1Ui8Op5As2Df9Gh6Jk3Lz0Xc';
const KEYS = [OPENAI_KEY, AZURE_KEY, CLAUDE_KEY];

let openai: FakeUpstream;
let azure: FakeUpstream;
let claude: FakeUpstream;
let platform: TestPlatform;

beforeAll(async () => {
  [openai, azure, claude] = await Promise.all([startFakeOpenAI({ answer: 'A cat.' }), startFakeOpenAI({ answer: 'A cat.' }), startFakeAnthropic({ answer: 'A cat.' })]);
  const vision = { tools: true, vision: true };
  const catalog = buildCatalog(
    {
      providers: [
        { id: 'oa', type: 'openai', base_url: `${openai.url}/v1`, api_key_env: 'FAKE_OPENAI_KEY' },
        { id: 'az', type: 'openai', base_url: azure.url, api_key_env: 'FAKE_AZURE_KEY', azure_api_version: '2024-10-21' },
        { id: 'an', type: 'anthropic', base_url: claude.url, api_key_env: 'FAKE_CLAUDE_KEY' },
      ],
      deployments: [
        { id: 'd-oa', provider: 'oa', model: 'gpt-fake' },
        { id: 'd-az', provider: 'az', model: 'gpt-azure' },
        { id: 'd-an', provider: 'an', model: 'claude-fake' },
      ],
      models: [
        { id: 'eye', family: 'openai', context_window: 100_000, max_output_tokens: 1_000, capabilities: vision, deployments: ['d-oa'] },
        { id: 'azure-eye', family: 'openai', context_window: 100_000, max_output_tokens: 1_000, capabilities: vision, deployments: ['d-az'] },
        { id: 'claude-eye', family: 'anthropic', context_window: 100_000, max_output_tokens: 1_000, capabilities: vision, deployments: ['d-an'] },
      ],
      routing: { tiers: { tier_1: ['eye'], tier_2: ['eye'], tier_3: ['eye'] } },
      circuit: { probe_interval_ms: 0, failure_threshold: 1_000, failure_rate: null },
    },
    'unsafe input test',
    { FAKE_OPENAI_KEY: OPENAI_KEY, FAKE_AZURE_KEY: AZURE_KEY, FAKE_CLAUDE_KEY: CLAUDE_KEY },
  );
  platform = await startTestPlatform({}, { catalog });
});
afterAll(async () => {
  await platform?.close();
  await Promise.all([openai, azure, claude].map((u) => u?.close()));
});

const withImage = (model: string, url: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url } }] }],
  ...extra,
});

describe('image URLs of chat completions', () => {
  const routes = [
    ['createGuardedChatCompletion', '/ai/v2/guarded/chat/completions'],
    ['createChatCompletionV1', '/ai/v1/chat/completions'],
  ] as const;

  for (const [operation, path] of routes) {
    it(`${operation}: refuses every unsafe URL with a 400 in the operation's shape, before any upstream call`, async () => {
      const before = openai.requests.length;
      for (const url of [...BAD_SCHEMES, ...PRIVATE_URLS, 'https://127.0.0.1:8081/api/v1/keys']) {
        for (const stream of [false, true]) {
          const res = await platform.api(path, { method: 'POST', body: JSON.stringify(withImage('eye', url, { stream })) });
          const body = await res.json();
          expect(res.status, url).toBe(400);
          expect(contractProblems(operation, 400, body), url).toEqual([]);
          expect(body.trace_id).toMatch(/^trc_/);
          expect(JSON.stringify(body), url).toMatch(/image_url/);
        }
      }
      expect(openai.requests.length).toBe(before);
    });

    it(`${operation}: passes https and base64 data:image URLs to the upstream as they were sent`, async () => {
      for (const url of ['https://example.org/cat.png', 'data:image/png;base64,iVBORw0KGgo=']) {
        const res = await platform.api(path, { method: 'POST', body: JSON.stringify(withImage('eye', url)) });
        expect(res.status).toBe(200);
        const sent = openai.requests.at(-1)!.body.messages.at(-1).content;
        expect(sent[1]).toEqual({ type: 'image_url', image_url: { url } });
      }
    });
  }

  it('names the refused part in the error', async () => {
    const res = await platform.api('/ai/v2/guarded/chat/completions', {
      method: 'POST',
      body: JSON.stringify({
        model: 'eye',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.org/ok.png' } }, { type: 'image_url', image_url: { url: 'https://[::ffff:127.0.0.1]:8081/' } }] },
        ],
      }),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('messages[1].content[1].image_url.url');
  });
});

describe('image URLs of the Responses API', () => {
  it('refuses a private host as it refuses a bad scheme, before any upstream call', async () => {
    const before = openai.requests.length;
    for (const url of ['https://169.254.169.254/latest/meta-data/', 'https://0x7f.1/', 'gopher://127.0.0.1:6379/_']) {
      const res = await platform.api('/ai/v2/guarded/responses', {
        method: 'POST',
        body: JSON.stringify({ model: 'eye', input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: url }] }] }),
      });
      const body = await res.json();
      expect(res.status, url).toBe(400);
      expect(contractProblems('createResponse', 400, body)).toEqual([]);
    }
    expect(openai.requests.length).toBe(before);
  });
});

describe('an upstream error that echoes the provider key', () => {
  const leaks = (text: string) => KEYS.filter((key) => text.includes(key) || text.includes(key.slice(0, 20)));

  it.each([
    ['eye', () => openai],
    ['azure-eye', () => azure],
    ['claude-eye', () => claude],
  ] as const)('%s: a 401 quoting the key in full reaches neither the client nor the log', async (model, upstream) => {
    upstream().faults.push({ type: 'bad_key', echoKey: true });
    const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }] }) });
    const text = await res.clone().text();
    expect(res.status).toBe(500);
    // The fake did echo it: what was sent to it carried the key.
    expect(JSON.stringify(upstream().requests.at(-1)!.headers)).toMatch(new RegExp(KEYS.join('|')));
    const lines = await logLinesOf(platform, res);
    expect(lines.join('\n')).toContain('Incorrect API key provided: Bearer [redacted]');
    expect(leaks(text)).toEqual([]);
    expect(leaks(platform.logs.join('\n'))).toEqual([]);
  });

  // After the stream's first token (Anthropic opens with three frames that carry none).
  it.each([
    ['eye', () => openai, 3],
    ['claude-eye', () => claude, 5],
  ] as const)('%s: an in-stream error quoting the key reaches neither the client nor the log', async (model, upstream, afterChunks) => {
    upstream().faults.push({ type: 'stream_error', error: 'auth', afterChunks, echoKey: true });
    const res = await platform.api('/ai/v2/guarded/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    });
    const text = await res.clone().text();
    const { chunks } = await readStream(new Response(text));
    const last = chunks.at(-1);
    expect(last.error).toBeDefined();
    expect(eventProblems('createGuardedChatCompletion', last)).toEqual([]);
    const lines = await logLinesOf(platform, res);
    expect(lines.join('\n')).toContain('[redacted]');
    expect(leaks(text)).toEqual([]);
    expect(leaks(platform.logs.join('\n'))).toEqual([]);
  });
});
