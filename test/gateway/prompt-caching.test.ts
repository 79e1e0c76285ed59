// Prompt caching end to end, against fake upstreams that cache and report it as the real
// ones do: `cache_control` reaches Anthropic (on system and message blocks, with its TTL),
// OpenAI's `prompt_cache_key` passes through (and breakpoints do not reach it), usage reports
// `prompt_tokens_details` (cached reads and cache writes), and billing prices them at the
// model's cached-input and cache-write prices, never as full input. The official `openai`
// client reads the cached tokens.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../../mocks/upstreams/fake-anthropic.js';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { costMicros } from '../../server/billing/pricing.js';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { createOrg, type TestOrg } from '../billing/support.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { meter } from '../support/usage.js';
import { readStream } from './support.js';

// Whole micro-dollars per token (price per 1M tokens = micro-dollars per token), so costs read easily.
const GPT_PRICES = { input_per_1m: 10, output_per_1m: 100, cached_input_per_1m: 1 };
const CLAUDE_PRICES = { input_per_1m: 10, output_per_1m: 100, cached_input_per_1m: 1, cache_write_per_1m: 20, cache_write_1h_per_1m: 40 };
const LONG_CONTEXT = 'The parish records of the river town list every baptism, marriage and burial since 1820, kept by hand in ledgers. '.repeat(20);

let openai: FakeUpstream;
let claude: FakeUpstream;
let platform: TestPlatform;
let org: TestOrg;
let client: OpenAI;

beforeAll(async () => {
  [openai, claude] = await Promise.all([startFakeOpenAI({ answer: 'Ledgers, kept by hand.', promptCaching: true }), startFakeAnthropic({ answer: 'Ledgers, kept by hand.' })]);
  const catalog = buildCatalog(
    {
      providers: [
        { id: 'oa', type: 'openai', base_url: `${openai.url}/v1` },
        { id: 'an', type: 'anthropic', base_url: claude.url },
      ],
      deployments: [
        { id: 'd-oa', provider: 'oa', model: 'gpt-fake' },
        { id: 'd-an', provider: 'an', model: 'claude-fake' },
      ],
      models: [
        { id: 'gpt', family: 'openai', context_window: 100_000, max_output_tokens: 1_000, pricing: GPT_PRICES, deployments: ['d-oa'] },
        { id: 'claude', family: 'anthropic', context_window: 100_000, max_output_tokens: 1_000, pricing: CLAUDE_PRICES, deployments: ['d-an'] },
        { id: 'claude-default-prices', family: 'anthropic', context_window: 100_000, max_output_tokens: 1_000, pricing: { input_per_1m: 10, output_per_1m: 100 }, deployments: ['d-an'] },
      ],
      routing: { tiers: { tier_1: ['gpt'], tier_2: ['gpt'], tier_3: ['gpt'] } },
      circuit: { probe_interval_ms: 0 },
    },
    'prompt caching test',
    {},
  );
  platform = await startTestPlatform({}, { catalog });
  org = await createOrg(platform, 'prompt-cache');
  client = new OpenAI({ baseURL: `${platform.apiUrl}/ai/v2`, apiKey: org.key, maxRetries: 0 });
});
afterAll(async () => {
  await platform?.close();
  await Promise.all([openai, claude].map((u) => u?.close()));
});

const chat = (body: unknown) => platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(body) });

/** A conversation whose long system text is a cache breakpoint; `question` varies the tail. */
const cachedConversation = (model: string, question: string, cacheControl: Record<string, unknown> = { type: 'ephemeral' }) => ({
  model,
  max_tokens: 50,
  messages: [
    { role: 'system', content: [{ type: 'text', text: LONG_CONTEXT, cache_control: cacheControl }] },
    { role: 'user', content: question },
  ],
});

describe('cache_control reaches Anthropic', () => {
  it('on a system part, a user part and a whole message (its last block), with the TTL', async () => {
    const res = await chat({
      model: 'claude',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: LONG_CONTEXT, cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        { role: 'user', content: 'First question?', cache_control: { type: 'ephemeral' } },
        { role: 'assistant', content: 'First answer.' },
        { role: 'user', content: [{ type: 'text', text: 'Second', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'question?' }] },
      ],
    });
    expect(res.status).toBe(200);
    const sent = claude.requests.at(-1)!.body;
    // The guarded route's tradition instruction goes first, a plain block.
    expect(sent.system.slice(-2)).toEqual([
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: LONG_CONTEXT, cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    expect(sent.system[0].cache_control).toBeUndefined();
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'First question?', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: [{ type: 'text', text: 'First answer.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Second', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'question?' }] },
    ]);
  });

  it('leaves the wire format as it was without breakpoints (system as one string)', async () => {
    const res = await chat({ model: 'claude', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(200);
    const sent = claude.requests.at(-1)!.body;
    expect(typeof sent.system).toBe('string');
    expect(sent.system.endsWith('Be brief.')).toBe(true);
  });

  it('is refused in a malformed shape by the contract (422), never sent on', async () => {
    const before = claude.requests.length;
    const res = await chat({ model: 'claude', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'forever' } }] }] });
    expect(res.status).toBe(422);
    expect(claude.requests.length).toBe(before);
  });
});

describe('Anthropic prompt-cache usage and its price', () => {
  it.each([false, true])('stream %s: a write, then a read, each reported and priced as such', async (stream) => {
    claude.promptCache.clear();
    const usageOf = async (question: string) => {
      const body = { ...cachedConversation('claude', question), stream, ...(stream ? { stream_options: { include_usage: true } } : {}) };
      const res = await chat(body);
      expect(res.status).toBe(200);
      if (!stream) {
        const json = await res.json();
        expect(contractProblems('createGuardedChatCompletion', 200, json)).toEqual([]);
        return json.usage;
      }
      const { chunks } = await readStream(res);
      return chunks.at(-1).usage;
    };
    const m = await meter(platform, { organizationId: org.id, model: 'claude' });
    const write = await usageOf('Which years do the ledgers cover?');
    const read = await usageOf('Who kept them?');
    const prefix = write.prompt_tokens_details.cache_write_tokens;
    expect(prefix).toBeGreaterThan(200);
    expect(write.prompt_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: prefix });
    expect(read.prompt_tokens_details).toEqual({ cached_tokens: prefix, cache_write_tokens: 0 });
    // prompt_tokens counts every input token, cached or not (OpenAI's meaning).
    expect(write.prompt_tokens).toBeGreaterThan(prefix);
    expect(write.total_tokens).toBe(write.prompt_tokens + write.completion_tokens);

    const added = await m.added(2);
    const rest = (u: typeof write) => u.prompt_tokens - prefix;
    // 10 µ$ per fresh input token, 20 per written, 1 per read, 100 per output token.
    const expected = BigInt(rest(write) * 10 + prefix * 20 + write.completion_tokens * 100 + rest(read) * 10 + prefix * 1 + read.completion_tokens * 100);
    expect(added.costMicros).toBe(expected);
    expect(added.billedMicros).toBe(expected);
    expect(added.inputTokens).toBe(write.prompt_tokens + read.prompt_tokens);
    // Billed as full input, the read alone would have cost 9 µ$ more per cached token.
    expect(added.costMicros).toBeLessThan(BigInt((write.prompt_tokens + read.prompt_tokens) * 10 + prefix * 10));
  });

  it('prices an hour-long write at cache_write_1h, and a model without cache prices at the default multipliers', async () => {
    claude.promptCache.clear();
    const m = await meter(platform, { organizationId: org.id, model: 'claude' });
    const hour = await (await chat(cachedConversation('claude', 'Where are they kept?', { type: 'ephemeral', ttl: '1h' }))).json();
    const prefix = hour.usage.prompt_tokens_details.cache_write_tokens;
    expect((await m.added(1)).costMicros).toBe(BigInt((hour.usage.prompt_tokens - prefix) * 10 + prefix * 40 + hour.usage.completion_tokens * 100));

    const d = await meter(platform, { organizationId: org.id, model: 'claude-default-prices' });
    // Written above for 'claude' (the same upstream model): a read here.
    const read = await (await chat(cachedConversation('claude-default-prices', 'Where are they kept?', { type: 'ephemeral', ttl: '1h' }))).json();
    expect(read.usage.prompt_tokens_details.cached_tokens).toBe(prefix);
    // Cached input at 0.1 × input: 1 µ$ a token.
    expect((await d.added(1)).costMicros).toBe(BigInt((read.usage.prompt_tokens - prefix) * 10 + prefix * 1 + read.usage.completion_tokens * 100));
  });
});

describe('OpenAI: prompt_cache_key passes through, cached tokens are read and priced', () => {
  it('sends prompt_cache_key and no cache_control to an OpenAI-compatible upstream', async () => {
    const res = await chat({ ...cachedConversation('gpt', 'Hi'), prompt_cache_key: 'parish-ledgers' });
    expect(res.status).toBe(200);
    const sent = openai.requests.at(-1)!.body;
    expect(sent.prompt_cache_key).toBe('parish-ledgers');
    expect(JSON.stringify(sent.messages)).not.toContain('cache_control');
    expect(sent.messages.at(-2).content).toEqual([{ type: 'text', text: LONG_CONTEXT }]);
  });

  it('through the openai client: cached_tokens on a repeated prefix, plain and streamed, billed at the cached price', async () => {
    openai.promptCache.clear();
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: LONG_CONTEXT },
      { role: 'user', content: 'Which years?' },
    ];
    const m = await meter(platform, { organizationId: org.id, model: 'gpt' });
    const first = await client.chat.completions.create({ model: 'gpt', messages, max_tokens: 50, prompt_cache_key: 'ledgers' });
    expect(first.usage!.prompt_tokens_details).toBeUndefined();
    const second = await client.chat.completions.create({ model: 'gpt', messages, max_tokens: 50, prompt_cache_key: 'ledgers' });
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThan(200);
    expect(cached).toBeLessThan(second.usage!.prompt_tokens);

    const stream = await client.chat.completions.create({ model: 'gpt', messages, max_tokens: 50, prompt_cache_key: 'ledgers', stream: true, stream_options: { include_usage: true } });
    let streamed: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) streamed = chunk.usage;
    expect(streamed!.prompt_tokens_details!.cached_tokens).toBe(cached);

    const added = await m.added(3);
    const price = (u: OpenAI.CompletionUsage) => {
      const read = u.prompt_tokens_details?.cached_tokens ?? 0;
      return (u.prompt_tokens - read) * 10 + read * 1 + u.completion_tokens * 100;
    };
    expect(added.costMicros).toBe(BigInt(price(first.usage!) + price(second.usage!) + price(streamed!)));
  });
});

describe('the catalog prices prompt caching', () => {
  it('gives the built-in OpenAI and Anthropic models their cache prices, and lists them', async () => {
    const catalog = buildCatalog(defaultConfig({ OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' }), 'defaults', { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' });
    expect(catalog.models.get('gloo-openai-gpt-5-mini')!.pricing).toMatchObject({ input_per_1m: 0.25, cached_input_per_1m: 0.025 });
    expect(catalog.models.get('gloo-openai-gpt-5')!.pricing).toMatchObject({ input_per_1m: 1.25, cached_input_per_1m: 0.125 });
    expect(catalog.models.get('gloo-anthropic-claude-haiku-4.5')!.pricing).toMatchObject({ cached_input_per_1m: 0.1, cache_write_per_1m: 1.25, cache_write_1h_per_1m: 2 });
    expect(catalog.models.get('gloo-anthropic-claude-sonnet-4.5')!.pricing).toMatchObject({ cached_input_per_1m: 0.3, cache_write_per_1m: 3.75, cache_write_1h_per_1m: 6 });

    const res = await platform.api('/ai/v2/models', { key: org.key });
    const listed = (await res.json()).data.find((m: { id: string }) => m.id === 'claude-default-prices');
    expect(listed.pricing).toEqual({ input_per_1m: 10, output_per_1m: 100, per_image: 0, cached_input_per_1m: 1, cache_write_per_1m: 12.5, cache_write_1h_per_1m: 20, currency: 'USD' });
  });

  it('costMicros: cached reads and writes at their prices, the rest at the input price', () => {
    const model = { pricing: { ...CLAUDE_PRICES, per_image: 0 } };
    expect(costMicros(model, { promptTokens: 1_000, completionTokens: 10 })).toBe(10_000n + 1_000n);
    expect(costMicros(model, { promptTokens: 1_000, completionTokens: 10, cachedTokens: 800 })).toBe(200n * 10n + 800n + 1_000n);
    expect(costMicros(model, { promptTokens: 1_000, completionTokens: 10, cacheWriteTokens: 800, cacheWrite1hTokens: 300 })).toBe(200n * 10n + 500n * 20n + 300n * 40n + 1_000n);
  });
});
