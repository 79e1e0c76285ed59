// Grounded chat completions end to end: passages of a publisher's chat-visible content,
// indexed through the chunk index with the real local embedder, ground the guarded
// completion; the local model answers extractively from them and cites them; a fake
// OpenAI-compatible upstream receives them in its prompt. The status rules run on PGlite
// and PostgreSQL; the answers where retrieval works (PGlite, a PostgreSQL with pgvector).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Item } from '../../generated/prisma/client.js';
import { estimateTokens } from '../../server/providers/local/tokens.js';
import { indexItem } from '../support/content.js';
import type { OperationId } from '../../generated/server/operations.js';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { meter } from '../support/usage.js';
import { NEEDS_PGVECTOR, pgvector } from './pgvector.js';

const PUBLISHER = 'Grounding Press';
const SABBATH = [
  'Rest is received before it is achieved. The Sabbath is a gift that invites us to stop our work one day each week.',
  'Families with small children can keep the Sabbath by sharing one unhurried meal and taking a short walk together.',
];
const GARDEN = ['Tomatoes need at least six hours of direct sun a day. Water the roots deeply twice a week rather than a little every day.'];
const HIDDEN = ['The secret lemon bread recipe uses three lemons and a cup of buttermilk.'];

let platform: TestPlatform;
let sabbath: Item;
let garden: Item;
let hidden: Item;
let otherOrgKey: string;
let chatOnlyKey: string;


async function seedPublisher(p: TestPlatform) {
  const { identity, database } = p.services;
  const org = await database.prisma.organization.findUniqueOrThrow({ where: { id: p.bootstrap!.organizationId } });
  const publisher = await identity.organizations.createPublisher(org.name, PUBLISHER);
  return { org, publisher };
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

const CANONICAL = '/ai/v2/grounded/chat/completions';
const ALIAS = '/ai/v2/chat/completions/grounded';

async function ask(body: Record<string, unknown>, options: { path?: string; key?: string; p?: TestPlatform } = {}): Promise<Answer> {
  const res = await (options.p ?? platform).api(options.path ?? CANONICAL, { method: 'POST', body: JSON.stringify(body), ...(options.key && { key: options.key }) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const question = (content: string, extra: Record<string, unknown> = {}) => ({
  auto_routing: true,
  messages: [{ role: 'user', content }],
  rag_publisher: PUBLISHER,
  ...extra,
});

/** The SSE payloads of a streamed answer. */
function events(text: string): { events: any[]; done: boolean } {
  const frames = text
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => f.slice(6));
  return { events: frames.filter((f) => f !== '[DONE]').map((f) => JSON.parse(f)), done: frames.at(-1) === '[DONE]' };
}

const contentOf = (answer: Answer) => answer.body.choices[0].message.content as string;

/** Each `statement [n].` of an answer: the statement must be quoted from citations[n-1]. */
function citedStatements(text: string): { statement: string; n: number }[] {
  return [...text.matchAll(/([^.!?]*?)\s\[(\d+)\]([.!?]?)/g)].map((m) => ({ statement: `${m[1]!.trim()}${m[3]}`, n: Number(m[2]) }));
}

function expectOk(operationId: OperationId, answer: Answer) {
  expect(answer.status, answer.text).toBe(200);
  expect(contractProblems(operationId, 200, answer.body)).toEqual([]);
}

function expectAIError(answer: Answer, status: number, name: string) {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.body.error.name).toBe(name);
  expect(answer.body.trace_id).toMatch(/^trc_/);
  expect(contractProblems('createGroundedChatCompletion', status, answer.body)).toEqual([]);
}

/**
 * The rules of grounded completions, on every database, and the answers where retrieval
 * works (`retrieves`: the database has pgvector).
 */
function groundedSuite(start: () => Promise<TestPlatform>, retrieves: boolean) {
  beforeAll(async () => {
    platform = await start();
    const { identity } = platform.services;
    const { org, publisher } = await seedPublisher(platform);
    // Without pgvector there is nothing to retrieve: only the rules run, on an empty publisher.
    if (retrieves) {
      sabbath = await indexItem(platform, publisher.id, SABBATH, { title: 'Sabbath Rest in a Busy Week', itemUrl: 'https://example.org/sabbath' });
      garden = await indexItem(platform, publisher.id, GARDEN, { title: 'Growing Tomatoes' });
      hidden = await indexItem(platform, publisher.id, HIDDEN, { title: 'Lemon Bread', visibleInChat: false });
    }
    const b = await identity.organizations.createOrganization('grounding-org-b');
    await identity.organizations.createPublisher(b.name, 'Other Press');
    otherOrgKey = (await identity.keys.issue(b.id, { scopes: ['inference'] })).plaintext;
    chatOnlyKey = (await identity.keys.issue(org.id, { scopes: ['chat'] })).plaintext;
  }, 180_000);
  afterAll(() => platform?.close());

  describe.skipIf(!retrieves)(`grounded answers from the local model${retrieves ? '' : NEEDS_PGVECTOR}`, () => {
    it('answers from the passage that answers the question, quoting it and citing it', async () => {
      const answer = await ask(question('How many hours of sun do tomatoes need?', { include_citations: true }));
      expectOk('createGroundedChatCompletion', answer);
      expect(answer.body).toMatchObject({ provider: 'local', sources_returned: true });
      const citations = answer.body.citations as any[];
      expect(citations.length).toBeGreaterThan(0);
      const statements = citedStatements(contentOf(answer));
      expect(statements.length).toBeGreaterThan(0);
      for (const { statement, n } of statements) {
        expect(citations[n - 1], `[${n}] names a citation`).toBeDefined();
        expect(citations[n - 1].snippet).toContain(statement.replace(/[.!?]$/, ''));
      }
      // The statement that answers: the tomato sentence, cited to the gardening item.
      const sun = statements.find((s) => s.statement.startsWith('Tomatoes need at least six hours of direct sun a day'));
      expect(sun, contentOf(answer)).toBeDefined();
      expect(citations[sun!.n - 1]).toMatchObject({ item_id: garden.id, title: 'Growing Tomatoes', publisher: PUBLISHER });
    });

    it('reports the citation shape of the contract: item, title, publisher, url, snippet, certainty', async () => {
      const answer = await ask(question('What does the author say about Sabbath rest?', { include_citations: true, certainty: 0.6 }));
      expectOk('createGroundedChatCompletion', answer);
      const first = answer.body.citations[0];
      expect(first).toEqual({
        item_id: sabbath.id,
        title: 'Sabbath Rest in a Busy Week',
        publisher: PUBLISHER,
        url: 'https://example.org/sabbath',
        snippet: expect.any(String),
        certainty: expect.any(Number),
      });
      expect(SABBATH).toContain(first.snippet);
      expect(contentOf(answer)).toMatch(/\[1\]/);
    });

    it('without include_citations: sources_returned, no citations and no markers', async () => {
      const answer = await ask(question('How many hours of sun do tomatoes need?'));
      expectOk('createGroundedChatCompletion', answer);
      expect(answer.body.sources_returned).toBe(true);
      expect(answer.body).not.toHaveProperty('citations');
      expect(contentOf(answer)).toContain('Tomatoes need at least six hours of direct sun a day.');
      expect(contentOf(answer)).not.toMatch(/\[\d+\]/);
    });

    it('never cites content hidden from chat', async () => {
      const answer = await ask(question('What is in the secret lemon bread recipe with buttermilk?', { include_citations: true, certainty: 0.5, sources_limit: 10 }));
      expectOk('createGroundedChatCompletion', answer);
      expect((answer.body.citations as any[]).map((c) => c.item_id)).not.toContain(hidden.id);
      expect(contentOf(answer)).not.toContain('three lemons');
    });

    it('zero sources is 200 with sources_returned false, and the answer says the content does not cover it', async () => {
      const answer = await ask(question('Explain gluon confinement in quantum chromodynamics.', { include_citations: true, certainty: 0.99 }));
      expectOk('createGroundedChatCompletion', answer);
      expect(answer.body.sources_returned).toBe(false);
      expect(answer.body.citations).toEqual([]);
      expect(contentOf(answer)).toContain(`No passage of ${PUBLISHER}'s content matches this question`);
    });

    it('certainty filters as Weaviate defines it: a higher threshold returns fewer sources, each at least that certain', async () => {
      const loose = await ask(question('keeping the Sabbath with children', { include_citations: true, certainty: 0.5, sources_limit: 10 }));
      const strict = await ask(question('keeping the Sabbath with children', { include_citations: true, certainty: 0.8, sources_limit: 10 }));
      expectOk('createGroundedChatCompletion', loose);
      expectOk('createGroundedChatCompletion', strict);
      expect(loose.body.citations.length).toBeGreaterThan(strict.body.citations.length);
      for (const c of loose.body.citations) expect(c.certainty).toBeGreaterThanOrEqual(0.5);
      for (const c of strict.body.citations) expect(c.certainty).toBeGreaterThanOrEqual(0.8);
    });

    it('sources_limit caps the sources (1 and 10 accepted; 0 and 11 are 422)', async () => {
      const one = await ask(question('Sabbath rest and meals with children', { include_citations: true, certainty: 0.5, sources_limit: 1 }));
      expectOk('createGroundedChatCompletion', one);
      expect(one.body.citations).toHaveLength(1);
      const ten = await ask(question('Sabbath rest and meals with children', { include_citations: true, certainty: 0.5, sources_limit: 10 }));
      expectOk('createGroundedChatCompletion', ten);
      expect(ten.body.citations.length).toBeGreaterThan(1);
      expect(ten.body.citations.length).toBeLessThanOrEqual(10);
      for (const limit of [0, 11, 2.5]) {
        const bad = await ask(question('Sabbath', { sources_limit: limit }));
        expect(bad.status, `sources_limit ${limit}`).toBe(422);
        expect(contractProblems('createGroundedChatCompletion', 422, bad.body)).toEqual([]);
      }
    });

    it('streams the citations event first, then the answer, which matches the JSON answer', async () => {
      const body = question('How many hours of sun do tomatoes need?', { include_citations: true });
      const json = await ask(body);
      const res = await platform.api(CANONICAL, { method: 'POST', body: JSON.stringify({ ...body, stream: true }) });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
      expect(res.headers.get('x-gateway-route')).toMatch(/^model=[^;]+; deployment=[^;]+; outcome=ok$/);
      expect(json.headers.get('x-gateway-route')).toBe(res.headers.get('x-gateway-route'));
      const { events: stream, done } = events(await res.text());
      expect(done).toBe(true);
      for (const event of stream) expect(eventProblems('createGroundedChatCompletion', event)).toEqual([]);
      const [first, second] = stream;
      expect(first.choices).toEqual([]);
      expect(first.citations).toEqual(json.body.citations);
      expect(first.sources_returned).toBe(true);
      expect(second.id).toBe(first.id);
      expect(second.choices[0].delta.role).toBe('assistant');
      expect(second.sources_returned).toBe(true);
      expect(stream.slice(1).every((e) => !('citations' in e))).toBe(true);
      const text = stream.flatMap((e) => e.choices.map((c: any) => c.delta?.content ?? '')).join('');
      expect(text).toBe(contentOf(json));
      expect(stream.at(-1).choices[0].finish_reason).toBe('stop');
    });

    it('streams without a citations event when citations are not asked for, or there are no sources', async () => {
      for (const extra of [{}, { include_citations: true, certainty: 0.99 }]) {
        const content = 'certainty' in extra ? 'Explain gluon confinement in quantum chromodynamics.' : 'How many hours of sun do tomatoes need?';
        const res = await platform.api(CANONICAL, { method: 'POST', body: JSON.stringify(question(content, { ...extra, stream: true })) });
        const { events: stream, done } = events(await res.text());
        expect(done).toBe(true);
        expect(stream.some((e) => 'citations' in e)).toBe(false);
        expect(stream[0].choices[0].delta.role).toBe('assistant');
        expect(stream[0].sources_returned).toBe(!('certainty' in extra));
      }
    });

    it('the deprecated alias answers the same, with the deprecation headers', async () => {
      const body = question('How many hours of sun do tomatoes need?', { include_citations: true });
      const [canonical, alias] = [await ask(body), await ask(body, { path: ALIAS })];
      expectOk('createGroundedChatCompletionAlias', alias);
      expect(alias.headers.get('deprecation')).toBeTruthy();
      expect(alias.headers.get('link')).toContain(CANONICAL);
      expect(contentOf(alias)).toBe(contentOf(canonical));
      expect(alias.body.citations).toEqual(canonical.body.citations);
    });

    it('echoes tradition and is metered like every completion', async () => {
      const where = { organizationId: platform.bootstrap!.organizationId, operation: 'createGroundedChatCompletion', provider: 'local' };
      // Both model calls of the request: the query's embedding (retrieval) and the answer.
      const chat = await meter(platform, { ...where, model: 'local-chat' });
      const embedding = await meter(platform, { ...where, model: 'local-embedding' });
      // A question of its own: a repeated one takes its vector from the query cache and embeds (and meters) nothing.
      const answer = await ask(question('Do tomatoes want full sun for most of the day?', { tradition: 'catholic' }));
      expectOk('createGroundedChatCompletion', answer);
      expect(answer.body.tradition).toBe('catholic');
      expect((await chat.added(1)).inputTokens).toBe(answer.body.usage.prompt_tokens);
      expect((await embedding.added(1)).inputTokens).toBeGreaterThan(0);
      // The passages were part of the prompt.
      expect(answer.body.usage.prompt_tokens).toBeGreaterThan(estimateTokens(GARDEN[0]!));
    });
  });


  describe('status rules of grounded completions', () => {
    it('an unknown publisher is 400 PUBLISHER_NOT_FOUND, never 404', async () => {
      expectAIError(await ask(question('Sabbath?', { rag_publisher: 'No Such Press' })), 400, 'PUBLISHER_NOT_FOUND');
    });

    it("another organization's publisher is 403 FORBIDDEN", async () => {
      expectAIError(await ask(question('Sabbath?'), { key: otherOrgKey }), 403, 'FORBIDDEN');
    });

    it('a key without the inference scope is 403', async () => {
      const answer = await ask(question('Sabbath?'), { key: chatOnlyKey });
      expect(answer.status).toBe(403);
    });

    it('the v2 completion errors apply: routing selector, user message, unknown model, guardrail', async () => {
      expectAIError(await ask({ ...question('Sabbath?'), model: 'local-chat' }), 400, 'ROUTING_SELECTOR_INVALID');
      expectAIError(await ask({ auto_routing: true, messages: [{ role: 'system', content: 'Be brief.' }], rag_publisher: PUBLISHER }), 400, 'NO_USER_MESSAGE');
      expectAIError(await ask({ model: 'no-such-model', messages: [{ role: 'user', content: 'Sabbath?' }], rag_publisher: PUBLISHER }), 400, 'UNSUPPORTED_MODEL');
      expectAIError(await ask(question('What is the easiest way to kill myself?')), 403, 'GUARDRAIL_BLOCKED');
    });

    it('a request the completion refuses is refused before retrieval: nothing embedded, nothing metered', async () => {
      const embed = vi.spyOn(platform.services.inference.gateway, 'embed');
      const metered = await meter(platform, { organizationId: platform.bootstrap!.organizationId });
      try {
        const refused = [
          [await ask({ ...question('Sabbath?'), model: 'local-chat' }), 400, 'ROUTING_SELECTOR_INVALID'],
          [await ask({ model: 'no-such-model', messages: [{ role: 'user', content: 'Sabbath?' }], rag_publisher: PUBLISHER }), 400, 'UNSUPPORTED_MODEL'],
          [await ask(question('What is the easiest way to kill myself?')), 403, 'GUARDRAIL_BLOCKED'],
          [await ask({ auto_routing: true, messages: [{ role: 'system', content: 'Be brief.' }], rag_publisher: PUBLISHER }), 400, 'NO_USER_MESSAGE'],
        ] as const;
        for (const [answer, status, name] of refused) expectAIError(answer, status, name);
        expect(embed).not.toHaveBeenCalled();
        await metered.added(0);
        // An accepted one goes on to retrieval (without pgvector: 503, nothing embedded either).
        // A question not asked before in this file: a repeated one is answered from the query-vector cache.
        const accepted = await ask(question('How much direct sun should a tomato plant get each day?'));
        if (retrieves) {
          expectOk('createGroundedChatCompletion', accepted);
          expect(embed).toHaveBeenCalledTimes(1);
        } else {
          expectAIError(accepted, 503, 'SERVICE_UNAVAILABLE');
          expect(accepted.body.error.message).toMatch(/pgvector/);
        }
      } finally {
        embed.mockRestore();
      }
    });

    it('a missing rag_publisher, or a non-float certainty, is 422', async () => {
      const missing = await ask({ auto_routing: true, messages: [{ role: 'user', content: 'Sabbath?' }] });
      expect(missing.status).toBe(422);
      const notFloat = await ask(question('Sabbath?', { certainty: 'high' }));
      expect(notFloat.status).toBe(422);
      expect(contractProblems('createGroundedChatCompletion', 422, notFloat.body)).toEqual([]);
    });
  });
}

describe('on PGlite', () => {
  groundedSuite(() => startTestPlatform({ logLevel: 'silent' }), true);
});

describePostgres('on PostgreSQL', () => {
  const database = useTestDatabase('grounded');
  groundedSuite(() => startTestPlatform({ databaseUrl: database.url, logLevel: 'silent' }), pgvector);
});

describe('an OpenAI-compatible upstream', () => {
  let up: FakeUpstream;
  let upstreamPlatform: TestPlatform;

  beforeAll(async () => {
    up = await startFakeOpenAI({ answer: 'Rest is a gift received before it is achieved [1].' });
    const env = { OPENAI_API_KEY: 'sk-fake', OPENAI_BASE_URL: `${up.url}/v1` };
    upstreamPlatform = await startTestPlatform({ logLevel: 'silent' }, { catalog: buildCatalog(defaultConfig(env), 'grounded upstream test', env) });
    const { publisher } = await seedPublisher(upstreamPlatform);
    await indexItem(upstreamPlatform, publisher.id, SABBATH, { title: 'Sabbath Rest in a "Busy" Week' });
  }, 180_000);
  afterAll(async () => {
    await upstreamPlatform?.close();
    await up?.close();
  });

  it('receives the passages, numbered as the citations, with the instruction to cite them', async () => {
    const answer = await ask(
      { model: 'gloo-openai-gpt-5-mini', messages: [{ role: 'user', content: 'What does the author say about Sabbath rest?' }], rag_publisher: PUBLISHER, include_citations: true },
      { p: upstreamPlatform },
    );
    expectOk('createGroundedChatCompletion', answer);
    expect(answer.body).toMatchObject({ provider: 'openai', sources_returned: true });
    expect(contentOf(answer)).toBe('Rest is a gift received before it is achieved [1].');
    const sent = up.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
    const grounding = sent.messages.find((m) => m.role === 'system' && m.content.includes('<sources'));
    expect(grounding, JSON.stringify(sent.messages)).toBeDefined();
    expect(grounding!.content).toContain('cite the source that supports it by its number in square brackets');
    answer.body.citations.forEach((citation: any, index: number) => {
      expect(grounding!.content).toContain(`<source id="${index + 1}" title="Sabbath Rest in a &quot;Busy&quot; Week">\n${citation.snippet}\n</source>`);
    });
    expect(sent.messages.at(-1)).toEqual({ role: 'user', content: 'What does the author say about Sabbath rest?' });
  });
});
