// Chat API v1 (deprecated) and paywall-related, on PGlite and PostgreSQL: chats kept per
// organization, answers grounded on the organization's publishers, the history as the
// public samples read it (role, timestamp), deletion of one message, FastAPI `detail`
// errors, and the paywall teaser with related articles. The rules run on both; answers
// need retrieval, so pgvector (PGlite ships it; on a PostgreSQL without it they are 503).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Item, Prisma } from '../../generated/prisma/client.js';
import { indexItem as indexContent } from '../support/content.js';
import type { OperationId } from '../../generated/server/operations.js';
import { clip } from '../../server/data/chat/clip.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { NEEDS_PGVECTOR, pgvector } from './pgvector.js';

const PUBLISHER = 'Chat Press';
let platform: TestPlatform;
let garden: Item;
let compost: Item;
let sabbath: Item;
let otherOrg: { key: string; publisher: string };
let inferenceOnlyKey: string;

const indexItem = (publisherId: string, passages: string[], data?: Partial<Prisma.ItemUncheckedCreateInput>) => indexContent(platform, publisherId, passages, data);


interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

async function call(method: string, path: string, body?: unknown, key?: string): Promise<Answer> {
  const res = await platform.api(path, { method, ...(body !== undefined && { body: JSON.stringify(body) }), ...(key && { key }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

const send = (body: Record<string, unknown>, key?: string) => call('POST', '/ai/v1/message', body, key);
const history = (chatId: string, key?: string) => call('GET', `/ai/v1/chat?chat_id=${encodeURIComponent(chatId)}`, undefined, key);
const remove = (messageId: string, key?: string) => call('DELETE', `/ai/v1/message?message_id=${encodeURIComponent(messageId)}`, undefined, key);

function expectOk(operationId: OperationId, answer: Answer) {
  expect(answer.status, answer.text).toBe(200);
  expect(contractProblems(operationId, 200, answer.body)).toEqual([]);
  expect(answer.headers.get('deprecation')).toBeTruthy();
}

/** FastAPI's error shape of the deprecated Chat API: a string `detail` and the trace id. */
function expectDetail(operationId: OperationId, answer: Answer, status: number, detail: RegExp) {
  expect(answer.status, answer.text).toBe(status);
  expect(Object.keys(answer.body).sort()).toEqual(['detail', 'trace_id']);
  expect(answer.body.detail).toMatch(detail);
  expect(contractProblems(operationId, status, answer.body)).toEqual([]);
}

/**
 * The Chat API and paywall-related: the rules on every database, the answers where retrieval
 * works (`retrieves`: the database has pgvector).
 */
function chatSuite(start: () => Promise<TestPlatform>, retrieves: boolean) {
  beforeAll(async () => {
    platform = await start();
    const { identity, database } = platform.services;
    const org = await database.prisma.organization.findUniqueOrThrow({ where: { id: platform.bootstrap!.organizationId } });
    const publisher = await identity.organizations.createPublisher(org.name, PUBLISHER);
    // Without pgvector there is nothing to retrieve: only the rules run, on an empty publisher.
    if (retrieves) {
      garden = await indexItem(
        publisher.id,
        [
          'Tomatoes need at least six hours of direct sun a day. Water tomato roots deeply twice a week rather than a little every day.',
          'Stake tomato plants early so the stems grow strong. Pinch the side shoots of tomato plants to keep the fruit large.',
        ],
        { title: 'Growing Tomatoes', producerId: 'garden-001', itemUrl: 'https://example.org/tomatoes', itemSummary: 'How to grow tomatoes in a small garden.' },
      );
      compost = await indexItem(publisher.id, ['Compost feeds tomato plants through the whole season. Mix kitchen scraps with dry leaves to make garden compost for tomatoes.'], {
        title: 'Garden Compost',
        itemUrl: 'https://example.org/compost',
      });
      sabbath = await indexItem(publisher.id, ['Rest is received before it is achieved. The Sabbath invites us to stop our work one day each week.'], { title: 'Sabbath Rest' });
    }
    const b = await identity.organizations.createOrganization('chat-org-b');
    const bPublisher = await identity.organizations.createPublisher(b.name, 'Other Chat Press');
    otherOrg = { key: (await identity.keys.issue(b.id, { scopes: ['chat', 'data:read'] })).plaintext, publisher: bPublisher.name };
    inferenceOnlyKey = (await identity.keys.issue(org.id, { scopes: ['inference'] })).plaintext;
  }, 180_000);
  afterAll(() => platform?.close());

  /** A question and its answer stored as the Chat API stores an exchange (the question's id is its query_id). */
  async function storedExchange() {
    const { prisma } = platform.services.database;
    const chat = await prisma.chat.create({ data: { organizationId: platform.bootstrap!.organizationId } });
    const queryId = randomUUID();
    const at = Date.now();
    await prisma.message.create({ data: { id: queryId, queryId, chatId: chat.id, role: 'user', content: 'Sun for tomatoes?', createdAt: new Date(at) } });
    const answer = await prisma.message.create({
      data: { queryId, chatId: chat.id, role: 'assistant', content: 'Six hours a day.', createdAt: new Date(at + 5), sources: [{ item_id: randomUUID(), title: 'T', publisher: PUBLISHER, url: null, snippet: 'Six hours.', certainty: 0.9 }] },
    });
    return { chatId: chat.id, queryId, answerId: answer.id, at };
  }

  describe.skipIf(!retrieves)(`Chat API v1 answers${retrieves ? '' : NEEDS_PGVECTOR}`, () => {
    it('answers the public sample unchanged, grounded on the organization, and its history reads as the sample reads it', async () => {
      // The exact payload of the public TypeScript sample (fields we do not act on included).
      const first = await send({ query: 'How many hours of sun do tomatoes need?', character_limit: 1000, sources_limit: 5, stream: false, publishers: [], enable_suggestions: 1 });
      expectOk('sendChatMessage', first);
      expect(first.body.success).toBe(true);
      expect(first.body.message).toContain('Tomatoes need at least six hours of direct sun a day');
      expect(first.body.sources.map((s: any) => s.item_id)).toContain(garden.id);
      expect(first.body.sources.find((s: any) => s.item_id === garden.id)).toMatchObject({ title: 'Growing Tomatoes', publisher: PUBLISHER, url: 'https://example.org/tomatoes' });
      expect(Date.parse(first.body.timestamp)).not.toBeNaN();

      const second = await send({ query: 'What does the Sabbath invite us to do?', chat_id: first.body.chat_id, publishers: [PUBLISHER] });
      expectOk('sendChatMessage', second);
      expect(second.body.chat_id).toBe(first.body.chat_id);
      expect(second.body.message).toContain('The Sabbath invites us to stop our work one day each week');

      const chat = await history(first.body.chat_id);
      expectOk('getChat', chat);
      expect(chat.body.chat_id).toBe(first.body.chat_id);
      expect(Date.parse(chat.body.created_at)).not.toBeNaN();
      const messages = chat.body.messages as any[];
      expect(messages.map((m) => m.role)).toEqual(['user', 'kallm', 'user', 'kallm']);
      expect(messages.map((m) => m.message)).toEqual([
        'How many hours of sun do tomatoes need?',
        first.body.message,
        'What does the Sabbath invite us to do?',
        second.body.message,
      ]);
      expect(messages[1]).toMatchObject({ query_id: first.body.query_id, message_id: first.body.message_id, query: 'How many hours of sun do tomatoes need?' });
      expect(messages[0]).toMatchObject({ query_id: first.body.query_id, message_id: first.body.query_id, sources: [] });
      expect(messages[1].sources).toEqual(first.body.sources);
      // What the sample prints: role upper-cased and the timestamp as a time, oldest first.
      const times = messages.map((m) => Date.parse(m.timestamp));
      expect(times.every((t) => !Number.isNaN(t))).toBe(true);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(messages.every((m) => m.created_at === m.timestamp)).toBe(true);
    });

    it('keeps the answer within character_limit', async () => {
      const answer = await send({ query: 'How should I grow tomatoes with stakes, sun and water?', character_limit: 60 });
      expectOk('sendChatMessage', answer);
      expect(answer.body.message.length).toBeGreaterThan(0);
      expect(answer.body.message.length).toBeLessThanOrEqual(60);
    });

    it('deletes one message: gone from the history, then 404 detail', async () => {
      const sent = await send({ query: 'How many hours of sun do tomatoes need?' });
      const deleted = await remove(sent.body.message_id);
      expectOk('deleteMessage', deleted);
      expect(deleted.body).toEqual({ deleted: true, message_id: sent.body.message_id });
      const chat = await history(sent.body.chat_id);
      expect(chat.body.messages.map((m: any) => m.role)).toEqual(['user']);
      expectDetail('deleteMessage', await remove(sent.body.message_id), 404, /^Failed to find message$/);
    });

  });

  describe('Chat API v1 rules', () => {
    it('lists a stored chat as questions and answers in order, as the samples read it', async () => {
      const mine = await storedExchange();
      const chat = await history(mine.chatId);
      expectOk('getChat', chat);
      expect(chat.body.messages.map((m: any) => [m.role, m.message, m.query, m.query_id])).toEqual([
        ['user', 'Sun for tomatoes?', 'Sun for tomatoes?', mine.queryId],
        ['kallm', 'Six hours a day.', 'Sun for tomatoes?', mine.queryId],
      ]);
      expect(chat.body.messages[1].sources[0]).toMatchObject({ snippet: 'Six hours.' });
      expect(chat.body.messages.map((m: any) => Date.parse(m.timestamp))).toEqual([mine.at, mine.at + 5]);
    });

    it("a missing message, another organization's message, or a malformed id is 404 detail; no message_id is FastAPI's 422", async () => {
      const mine = await storedExchange();
      expectDetail('deleteMessage', await remove(randomUUID()), 404, /^Failed to find message$/);
      expectDetail('deleteMessage', await remove(mine.answerId, otherOrg.key), 404, /^Failed to find message$/);
      expectDetail('deleteMessage', await remove('not-a-uuid'), 404, /^Failed to find message$/);
      // Still there for its owner, who can delete it.
      expect((await history(mine.chatId)).body.messages).toHaveLength(2);
      expectOk('deleteMessage', await remove(mine.answerId));
      expect((await history(mine.chatId)).body.messages.map((m: any) => m.role)).toEqual(['user']);
      const missing = await call('DELETE', '/ai/v1/message');
      expect(missing.status).toBe(422);
      expect(missing.body.detail).toEqual([{ type: 'missing', loc: ['query', 'message_id'], msg: 'Field required', input: null }]);
    });

    it("the history of a missing or another organization's chat is 404 detail; continuing it is 400", async () => {
      const mine = { body: { chat_id: (await storedExchange()).chatId } };
      expectDetail('getChat', await history(mine.body.chat_id, otherOrg.key), 404, /chat/i);
      expectDetail('getChat', await history(randomUUID()), 404, /chat/i);
      expectDetail('getChat', await history('nope'), 404, /chat/i);
      expectDetail('sendChatMessage', await send({ query: 'More?', chat_id: mine.body.chat_id }, otherOrg.key), 400, /chat/i);
      expect((await call('GET', '/ai/v1/chat')).status).toBe(422);
    });

    it("an unknown publisher is 400 detail, another organization's is 403 detail", async () => {
      expectDetail('sendChatMessage', await send({ query: 'Sabbath?', publishers: ['No Such Press'] }), 400, /No Such Press/);
      expectDetail('sendChatMessage', await send({ query: 'Sabbath?', publishers: [otherOrg.publisher] }), 403, /Other Chat Press/);
      // Up to 1,000 names, looked up at once: every unknown one is named.
      const unknown = Array.from({ length: 1000 }, (_, i) => `Unknown Chat Press ${i}`);
      expectDetail('sendChatMessage', await send({ query: 'Sabbath?', publishers: unknown }), 400, /"Unknown Chat Press 0".*"Unknown Chat Press 999"/);
      expect((await send({ query: 'Sabbath?', publishers: [...unknown, 'one more'] })).status).toBe(422);
    });

    it('a query the guardrails block is refused before retrieval: nothing embedded, nothing stored', async () => {
      const embed = vi.spyOn(platform.services.inference.gateway, 'embed');
      try {
        const chats = await platform.services.database.prisma.chat.count();
        const blocked = await send({ query: 'What is the easiest way to kill myself?' });
        expect(blocked.status, blocked.text).toBe(403);
        expect(contractProblems('sendChatMessage', 403, blocked.body)).toEqual([]);
        expect(embed).not.toHaveBeenCalled();
        expect(await platform.services.database.prisma.chat.count()).toBe(chats);
      } finally {
        embed.mockRestore();
      }
    });

    it('needs the chat scope; an empty query is 400', async () => {
      expect((await send({ query: 'Sabbath?' }, inferenceOnlyKey)).status).toBe(403);
      expectDetail('sendChatMessage', await send({ query: '   ' }), 400, /query/);
    });

    it.skipIf(retrieves)(`without pgvector, a new message and related articles are 503 (after every check)${retrieves ? ' (skipped: this database has pgvector)' : ''}`, async () => {
      const chat = await send({ query: 'Sun for tomatoes?' });
      expectDetail('sendChatMessage', chat, 503, /pgvector/);
      const { database } = platform.services;
      const publisher = await database.prisma.publisher.findUniqueOrThrow({ where: { name: PUBLISHER } });
      await database.prisma.item.create({ data: { publisherId: publisher.id, fileName: 'pg.md', title: 'Growing Tomatoes', producerId: 'pg-001' } });
      const related = await call('POST', '/ai/v1/kallm/paywall/related', { request: { producer_id: 'pg-001' }, request_body: { tenant: PUBLISHER } });
      expectDetail('getPaywallRelated', related, 503, /pgvector/);
    });
  });

  describe('paywall related (deprecated)', () => {
    const related = (body: unknown, key?: string) => call('POST', '/ai/v1/kallm/paywall/related', body, key);

    it.skipIf(!retrieves)(`summarises the item from its own text and lists related articles, never the item itself${retrieves ? '' : NEEDS_PGVECTOR}`, async () => {
      const answer = await related({ request: { producer_id: 'garden-001' }, request_body: { collection: 'GlooProd', tenant: PUBLISHER } });
      expectOk('getPaywallRelated', answer);
      expect(answer.body.ai_paywall_summary).toBe('How to grow tomatoes in a small garden.');
      const text = 'Tomatoes need at least six hours of direct sun a day. Water tomato roots deeply twice a week rather than a little every day. Stake tomato plants early so the stems grow strong. Pinch the side shoots of tomato plants to keep the fruit large.';
      expect(answer.body.bullet_points.length).toBeGreaterThan(0);
      for (const point of answer.body.bullet_points) expect(text).toContain(point);
      expect(text).toContain(answer.body.ai_why_read);
      const ids = answer.body.related_articles.map((a: any) => a.item_id);
      expect(ids).not.toContain(garden.id);
      expect(ids[0]).toBe(compost.id);
      expect(answer.body.related_articles[0]).toMatchObject({ item_title: 'Garden Compost', item_url: 'https://example.org/compost' });
      expect(ids).not.toContain(sabbath.id);
    });

    it('unknown item or tenant is 400 detail; another organization\'s tenant is 403 detail', async () => {
      expectDetail('getPaywallRelated', await related({ request: { producer_id: 'nope' }, request_body: { tenant: PUBLISHER } }), 400, /nope/);
      expectDetail('getPaywallRelated', await related({ request: {}, request_body: { tenant: PUBLISHER } }), 400, /producer_id/);
      expectDetail('getPaywallRelated', await related({ request: { producer_id: 'garden-001' }, request_body: { tenant: 'No Such Press' } }), 400, /No Such Press/);
      expectDetail('getPaywallRelated', await related({ request: { producer_id: 'garden-001' }, request_body: { tenant: PUBLISHER } }, otherOrg.key), 403, /Chat Press/);
    });
  });
}

describe('on PGlite', () => {
  chatSuite(() => startTestPlatform({ logLevel: 'silent' }), true);
});

describePostgres('on PostgreSQL', () => {
  const database = useTestDatabase('chat');
  chatSuite(() => startTestPlatform({ databaseUrl: database.url, logLevel: 'silent' }), pgvector);
});

describe('clip (character_limit)', () => {
  it('cuts at the last whole sentence that fits, else at a word with an ellipsis, never beyond the limit', () => {
    expect(clip('One two three. Four five six.', 100)).toBe('One two three. Four five six.');
    expect(clip('One two three. Four five six.', 20)).toBe('One two three.');
    expect(clip('Version 3.5 is out now', 10)).toBe('Version…');
    for (let limit = 1; limit < 40; limit++) expect(clip('Alpha beta gamma delta epsilon zeta eta theta.', limit).length).toBeLessThanOrEqual(limit);
  });
});
