// Grounded answers and the Chat API on PostgreSQL. The chat history and message deletion
// are plain SQL and run everywhere. Retrieval needs pgvector: on a server without it (CI's
// PostgreSQL 15 here) grounded completions and new chat messages are 503
// SERVICE_UNAVAILABLE, as the README says, and the grounded answer itself is tested on
// PGlite (test/data/grounded.test.ts, chat.test.ts); with pgvector it is tested here too.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { estimateTokens } from '../../server/providers/local/tokens.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, postgresAvailable, TEST_POSTGRES_URL, useTestDatabase } from '../support/postgres.js';

async function serverHasPgvector(): Promise<boolean> {
  if (!postgresAvailable) return false;
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return (await client.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`)).rowCount === 1;
  } finally {
    await client.end();
  }
}
const pgvector = await serverHasPgvector();
const NEEDS_PGVECTOR = pgvector ? '' : ' (skipped: this PostgreSQL has no pgvector, which retrieval needs; PGlite runs it)';

describePostgres('grounded answers and the Chat API on PostgreSQL', () => {
  const database = useTestDatabase('chat');
  let platform: TestPlatform;
  let organizationId: string;
  let otherKey: string;

  beforeAll(async () => {
    platform = await startTestPlatform({ databaseUrl: database.url, logLevel: 'silent' });
    organizationId = platform.bootstrap!.organizationId;
    const { identity } = platform.services;
    const org = await platform.services.database.prisma.organization.findUniqueOrThrow({ where: { id: organizationId } });
    const publisher = await identity.organizations.createPublisher(org.name, 'PG Press');
    const b = await identity.organizations.createOrganization('pg-chat-b');
    otherKey = (await identity.keys.issue(b.id, { scopes: ['chat'] })).plaintext;
    if (platform.services.database.capabilities.vector) {
      const { database: db, chunkIndex, inference } = platform.services;
      const passages = ['Tomatoes need at least six hours of direct sun a day.'];
      const item = await db.prisma.item.create({ data: { publisherId: publisher.id, fileName: 'tomatoes.md', title: 'Growing Tomatoes' } });
      const space = await chunkIndex.embeddingSpace(publisher.id);
      const { result } = await inference.gateway.embed(space.model, passages, space.dimensions, AbortSignal.timeout(120_000));
      await chunkIndex.replaceItemChunks(item.id, space, [{ ordinal: 0, content: passages[0]!, tokenCount: estimateTokens(passages[0]!), embedding: result.vectors[0]! }]);
    }
  }, 180_000);
  afterAll(() => platform?.close());

  const json = async (res: Response) => ({ status: res.status, body: await res.json() });

  it('lists a chat as questions and answers in order, and deletes one message for its organization only', async () => {
    // Stored as the Chat API stores an exchange: the question's id is its query_id.
    const prisma = platform.services.database.prisma;
    const chat = await prisma.chat.create({ data: { organizationId } });
    const queryId = randomUUID();
    const at = Date.now();
    await prisma.message.create({ data: { id: queryId, queryId, chatId: chat.id, role: 'user', content: 'Sun for tomatoes?', createdAt: new Date(at) } });
    const answer = await prisma.message.create({
      data: { queryId, chatId: chat.id, role: 'assistant', content: 'Six hours a day.', createdAt: new Date(at + 5), sources: [{ item_id: randomUUID(), title: 'T', publisher: 'PG Press', url: null, snippet: 'Six hours.', certainty: 0.9 }] },
    });

    const history = await json(await platform.api(`/ai/v1/chat?chat_id=${chat.id}`));
    expect(history.status).toBe(200);
    expect(contractProblems('getChat', 200, history.body)).toEqual([]);
    expect(history.body.messages.map((m: any) => [m.role, m.message, m.query, m.query_id])).toEqual([
      ['user', 'Sun for tomatoes?', 'Sun for tomatoes?', queryId],
      ['kallm', 'Six hours a day.', 'Sun for tomatoes?', queryId],
    ]);
    expect(history.body.messages[1].sources[0]).toMatchObject({ snippet: 'Six hours.' });

    expect((await json(await platform.api(`/ai/v1/message?message_id=${answer.id}`, { method: 'DELETE', key: otherKey }))).status).toBe(404);
    const deleted = await json(await platform.api(`/ai/v1/message?message_id=${answer.id}`, { method: 'DELETE' }));
    expect(deleted).toEqual({ status: 200, body: { deleted: true, message_id: answer.id } });
    const after = await json(await platform.api(`/ai/v1/chat?chat_id=${chat.id}`));
    expect(after.body.messages.map((m: any) => m.role)).toEqual(['user']);
    expect((await json(await platform.api(`/ai/v1/chat?chat_id=${chat.id}`, { key: otherKey }))).status).toBe(404);
  });

  it.skipIf(pgvector)('without pgvector, grounded completions and new chat messages are 503 SERVICE_UNAVAILABLE', async () => {
    const grounded = await json(
      await platform.api('/ai/v2/grounded/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ auto_routing: true, messages: [{ role: 'user', content: 'Sun for tomatoes?' }], rag_publisher: 'PG Press' }),
      }),
    );
    expect(grounded.status).toBe(503);
    expect(grounded.body.error.name).toBe('SERVICE_UNAVAILABLE');
    expect(contractProblems('createGroundedChatCompletion', 503, grounded.body)).toEqual([]);
    const chat = await json(await platform.api('/ai/v1/message', { method: 'POST', body: JSON.stringify({ query: 'Sun for tomatoes?' }) }));
    expect(chat.status).toBe(503);
    expect(chat.body.detail).toMatch(/pgvector/);
    // The publisher rules still come first.
    const unknown = await json(
      await platform.api('/ai/v2/grounded/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ auto_routing: true, messages: [{ role: 'user', content: 'Sun?' }], rag_publisher: 'No Such Press' }),
      }),
    );
    expect(unknown.body.error.name).toBe('PUBLISHER_NOT_FOUND');
  });

  it.skipIf(!pgvector)(`answers grounded on the indexed passage${NEEDS_PGVECTOR}`, async () => {
    const answer = await json(
      await platform.api('/ai/v2/grounded/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ auto_routing: true, messages: [{ role: 'user', content: 'How many hours of sun do tomatoes need?' }], rag_publisher: 'PG Press', include_citations: true }),
      }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.sources_returned).toBe(true);
    expect(answer.body.choices[0].message.content).toContain('Tomatoes need at least six hours of direct sun a day [1].');
  });
});
