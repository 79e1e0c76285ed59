// The admission estimate: the worst case of everything the model will be sent, neither too
// low (grounding passages, the conversation a follow-up continues, tool definitions, the
// tradition instruction) nor too high (a base64 image is one image, not its characters as
// tokens). Unit checks of estimateRequest, then what it means for the gates end to end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routesById, type OperationId } from '../../generated/contract/routes.js';
import { estimateRequest, Estimator, IMAGE_HOLD_TOKENS, type PromptHistory } from '../../server/billing/estimate.js';
import { MAX_TOKENS as MAX_PASSAGE_TOKENS } from '../../server/data/ingestion/pipeline.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { createOrg, pricedCatalog, settled, type TestOrg } from './support.js';

const catalog = pricedCatalog({
  models: [{ id: 'seeing', family: 'local', context_window: 32_768, max_output_tokens: 4_096, capabilities: { vision: true }, pricing: { input_per_1m: 1000, output_per_1m: 2000 }, deployments: ['local-chat'] }],
});
const estimate = (operation: OperationId, body: Record<string, unknown>, history = 0) => estimateRequest(catalog, routesById[operation], body, history);
const question = [{ role: 'user', content: 'What does the text say about rest?' }];
/** A 1 MB base64 image. */
const BIG_IMAGE = `data:image/png;base64,${'A'.repeat(1_000_000)}`;

describe('estimateRequest', () => {
  it('prices a model at the most expensive model the request may end on: itself or one of its fallbacks', () => {
    const withFallbacks = pricedCatalog({
      models: [
        { id: 'thrifty', family: 'local', context_window: 32_768, max_output_tokens: 4_096, pricing: { input_per_1m: 1, output_per_1m: 1 }, deployments: ['local-chat'], fallbacks: ['cheap'], context_window_fallbacks: ['priced'] },
      ],
    });
    const body = { model: 'thrifty', max_tokens: 10, messages: question };
    expect(estimateRequest(withFallbacks, routesById.createGuardedChatCompletion, body).model!.id).toBe('priced');
    expect(estimateRequest(withFallbacks, routesById.createGuardedChatCompletion, { ...body, model: 'cheap' }).model!.id).toBe('cheap');
  });

  it('makes room for every passage sources_limit allows on grounded routes', () => {
    const base = estimate('createGuardedChatCompletion', { model: 'priced', max_tokens: 10, messages: question });
    for (const operation of ['createGroundedChatCompletion', 'createGroundedChatCompletionAlias'] as const) {
      const one = estimate(operation, { model: 'priced', max_tokens: 10, messages: question, rag_publisher: 'Acme', sources_limit: 1 });
      const ten = estimate(operation, { model: 'priced', max_tokens: 10, messages: question, rag_publisher: 'Acme', sources_limit: 10 });
      expect(one.promptTokens - base.promptTokens).toBeGreaterThanOrEqual(MAX_PASSAGE_TOKENS);
      expect(ten.promptTokens - one.promptTokens).toBeGreaterThanOrEqual(9 * MAX_PASSAGE_TOKENS);
    }
    const grounded = estimate('createGroundedResponse', { model: 'priced', input: 'What about rest?', rag_publisher: 'Acme', sources_limit: 10 });
    expect(grounded.promptTokens).toBeGreaterThan(10 * MAX_PASSAGE_TOKENS);
  });

  it('counts tool definitions and response schemas', () => {
    const tool = { type: 'function', function: { name: 'lookup_weather', description: 'Looks up the weather of a city on a date, in detail.', parameters: { type: 'object', properties: { city: { type: 'string' }, date: { type: 'string' } } } } };
    const plain = estimate('createGuardedChatCompletion', { model: 'priced', max_tokens: 10, messages: question });
    const tools = estimate('createGuardedChatCompletion', { model: 'priced', max_tokens: 10, messages: question, tools: [tool, tool] });
    expect(tools.promptTokens - plain.promptTokens).toBeGreaterThan(40);
    const responseTools = estimate('createResponse', { model: 'priced', input: 'Weather?', tools: [{ type: 'function', ...tool.function }] });
    const responsePlain = estimate('createResponse', { model: 'priced', input: 'Weather?' });
    expect(responseTools.promptTokens - responsePlain.promptTokens).toBeGreaterThan(20);
  });

  it('counts the tradition instruction of guarded Responses routes, not of v1', () => {
    const guarded = estimate('createResponse', { model: 'priced', input: 'Hello' });
    const direct = estimate('createResponseV1', { model: 'priced', input: 'Hello' });
    expect(guarded.promptTokens - direct.promptTokens).toBeGreaterThan(20);
  });

  it('counts an image as one image, whatever its base64 size (at the hold cost unless low detail)', () => {
    const image = (detail?: string) => estimate('createResponse', {
      model: 'seeing',
      max_output_tokens: 10,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: BIG_IMAGE, ...(detail ? { detail } : {}) }] }],
    });
    expect(image().promptTokens).toBeGreaterThanOrEqual(IMAGE_HOLD_TOKENS);
    expect(image().promptTokens).toBeLessThan(IMAGE_HOLD_TOKENS + 200);
    expect(image('low').promptTokens).toBeLessThan(300);
    const chat = estimate('createGuardedChatCompletion', {
      model: 'seeing',
      max_tokens: 10,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: BIG_IMAGE } }] }],
    });
    expect(chat.promptTokens).toBeGreaterThanOrEqual(IMAGE_HOLD_TOKENS);
    expect(chat.promptTokens).toBeLessThan(IMAGE_HOLD_TOKENS + 200);
  });

  it('counts the conversation a follow-up continues', () => {
    const fresh = estimate('createResponse', { model: 'priced', input: 'And then?' });
    const followUp = estimate('createResponse', { model: 'priced', input: 'And then?', previous_response_id: 'resp_1' }, 5_000);
    expect(followUp.promptTokens - fresh.promptTokens).toBe(5_000);
  });

  it('estimates a Chat API message: its sources, its character limit as output, automatic routing', () => {
    const message = estimate('sendChatMessage', { query: 'What is rest?', character_limit: 300 });
    expect(message.outputTokens).toBe(100);
    expect(message.promptTokens).toBeGreaterThan(3 * MAX_PASSAGE_TOKENS);
    expect(message.model?.id).toBe('priced'); // the most expensive chat model
  });
});

describe('Estimator', () => {
  const calls: string[] = [];
  const history: PromptHistory = {
    response: async (org, id) => (calls.push(`response ${org} ${id}`), 7_000),
    chat: async (org, id) => (calls.push(`chat ${org} ${id}`), 900),
  };
  const estimator = new Estimator({ catalog }, history);
  const res = () => ({ locals: {} }) as never;

  it('reads the stored conversation a follow-up names, once per request', async () => {
    const r = res();
    const body = { model: 'priced', input: 'And then?', previous_response_id: 'resp_9' };
    const first = await estimator.of(r, routesById.createResponse, body, 'org-1');
    expect(await estimator.of(r, routesById.createResponse, body, 'org-1')).toBe(first);
    expect(first.promptTokens).toBe(estimate('createResponse', body).promptTokens + 7_000);
    const message = await estimator.of(res(), routesById.sendChatMessage, { query: 'More?', chat_id: 'c-1' }, 'org-1');
    expect(message.promptTokens).toBe(estimate('sendChatMessage', { query: 'More?' }).promptTokens + 900);
    expect(calls).toEqual(['response org-1 resp_9', 'chat org-1 c-1']);
  });
});

describe('end to end', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog });
  });
  afterAll(() => platform?.close());

  const post = (org: TestOrg, path: string, body: unknown) => platform.api(path, { method: 'POST', key: org.key, body: JSON.stringify(body) });
  const imageRequest = { model: 'seeing', max_output_tokens: 20, input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: BIG_IMAGE }] }] };

  it('does not refuse a large base64 image for credit (402) or tokens per minute (429) as if it were text', async () => {
    const org = await createOrg(platform, 'image');
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    // About 2,000 prompt tokens and 20 output tokens at 1,000 / 2,000 µ$ each.
    await platform.services.billing.accounts.addCredit(org.id, 3_000_000n, 'test');
    await platform.services.limits.quotas.set(org.id, null, { requestsPerMinute: null, tokensPerMinute: 10_000 });
    const res = await post(org, '/ai/v2/responses', imageRequest);
    expect(res.status, await res.clone().text()).toBe(200);
  });

  it('holds the conversation a follow-up continues', async () => {
    const org = await createOrg(platform, 'history');
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    await platform.services.billing.accounts.addCredit(org.id, 100_000_000n, 'test');
    const long = Array.from({ length: 2_000 }, (_, i) => `word${i}`).join(' ');
    const first = await post(org, '/ai/v2/responses', { model: 'priced', max_output_tokens: 10, input: long });
    expect(first.status).toBe(200);
    const { id } = await first.json();
    expect((await post(org, '/ai/v2/responses', { model: 'priced', max_output_tokens: 10, input: 'And then?', previous_response_id: id })).status).toBe(200);
    await settled(platform, org.id);
    const [opening, followUp] = await platform.services.database.prisma.billingReservation.findMany({ where: { organizationId: org.id }, orderBy: { createdAt: 'asc' } });
    // The follow-up sends the whole first turn again: its hold covers it.
    expect(followUp.estimateMicros).toBeGreaterThan(opening.estimateMicros);
  });
});
