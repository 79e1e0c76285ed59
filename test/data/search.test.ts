// searchCollection (+ alias), getRecommendations (+ verbose) and the affiliates' referenced
// items, end to end over HTTP: the status rules of spec part 7 one by one, the answer
// shapes of the contract, ranking, and that only the caller's visible, live items appear.
//
// The request rules hold on every database, so they run on PGlite and on PostgreSQL.
// Finding passages needs pgvector: those tests run on PGlite (which ships it) and on a
// PostgreSQL that has it; on one without (CI's here) a valid search is answered 503.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OperationId } from '../../generated/server/operations.js';
import { indexItem as indexContent } from '../support/content.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { NEEDS_PGVECTOR, pgvector, WITHOUT_PGVECTOR } from './pgvector.js';

const TRACE = /^trc_[0-9a-f]{32}$/;
const SEARCH_PATHS = [
  ['searchCollection', '/ai/v1/data/search'],
  ['searchCollectionAlias', '/ai/data/v1/search'],
] as const;

interface Answer {
  status: number;
  body: any;
  text: string;
}

interface World {
  platform: TestPlatform;
  publisherName: string;
  secondPublisherName: string;
  foreignPublisherName: string;
}

async function buildWorld(platform: TestPlatform): Promise<World> {
  const { identity, database } = platform.services;
  const publisher = await database.prisma.publisher.findUniqueOrThrow({ where: { id: platform.bootstrap!.publisherId } });
  const second = await identity.organizations.createPublisher('default', 'Second Press');
  const other = await identity.organizations.createOrganization('search-other-org');
  const foreign = await identity.organizations.createPublisher(other.name, 'Foreign Press');
  return { platform, publisherName: publisher.name, secondPublisherName: second.name, foreignPublisherName: foreign.name };
}

async function post(platform: TestPlatform, path: string, body: unknown, key?: string): Promise<Answer> {
  const res = await platform.api(path, { method: 'POST', body: JSON.stringify(body), ...(key && { key }) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

function expectAnswer(operationId: OperationId, answer: Answer, status: number): void {
  expect(answer.status, answer.text).toBe(status);
  if (status >= 400) expect(answer.body.trace_id).toMatch(TRACE);
  expect(contractProblems(operationId, status, answer.body)).toEqual([]);
}

/** The request rules of part 7: the same on every database, checked before any retrieval. */
function requestRules(start: () => Promise<TestPlatform>) {
  let world: World;
  beforeAll(async () => {
    world = await buildWorld(await start());
  });
  afterAll(() => world?.platform.close());

  const valid = () => ({ query: 'rest for weary parents', collection: 'GlooProd', tenant: world.publisherName });

  describe.each(SEARCH_PATHS)('%s', (operationId, path) => {
    const search = (body: unknown) => post(world.platform, path, body);

    it.each([
      ['an empty query', { query: '' }, /query must not be empty/],
      ['a blank query', { query: '   ' }, /query must not be empty/],
      ['an empty collection', { collection: '' }, /collection must not be empty/],
      ['a limit of 0', { limit: 0 }, /limit/],
      ['a negative limit', { limit: -5 }, /limit/],
      ['a limit above 100', { limit: 101 }, /limit/],
      ['a fractional limit', { limit: 2.5 }, /limit/],
    ])('403 forbidden for %s', async (_name, change, message) => {
      const answer = await search({ ...valid(), ...change });
      expectAnswer(operationId, answer, 403);
      expect(answer.body).toMatchObject({ code: 'forbidden', error: expect.stringMatching(message) });
    });

    it('403 for an empty query comes before a bad collection or tenant', async () => {
      const answer = await search({ query: '', collection: 'NoSuchCollection' });
      expectAnswer(operationId, answer, 403);
    });

    it('400 for a collection the organization does not have', async () => {
      const answer = await search({ ...valid(), collection: 'NoSuchCollection' });
      expectAnswer(operationId, answer, 400);
      expect(answer.body.detail).toMatch(/Invalid collection/);
    });

    it('400 for a multi-tenant collection without a tenant, or with an empty one', async () => {
      for (const tenant of [undefined, '']) {
        const answer = await search({ query: 'rest', collection: 'GlooProd', ...(tenant !== undefined && { tenant }) });
        expectAnswer(operationId, answer, 400);
        expect(answer.body.detail).toMatch(/Missing tenant/);
      }
    });

    it('400 for a tenant that is no publisher', async () => {
      const answer = await search({ ...valid(), tenant: 'No Such Press' });
      expectAnswer(operationId, answer, 400);
      expect(answer.body.detail).toMatch(/Invalid tenant/);
    });

    it("400 for another organization's publisher as tenant, answered as a name that exists nowhere", async () => {
      const foreign = await search({ ...valid(), tenant: world.foreignPublisherName });
      const nowhere = await search({ ...valid(), tenant: 'Press That Exists Nowhere' });
      expectAnswer(operationId, foreign, 400);
      expect(foreign.body.detail).toBe(nowhere.body.detail.replace('Press That Exists Nowhere', world.foreignPublisherName));
      expect(foreign.text).not.toContain('search-other-org');
    });

    it('422 for an absent query or collection, or a limit that is not a number (field validation, spec 7.1)', async () => {
      const { query: _query, ...noQuery } = valid();
      const { collection: _collection, ...noCollection } = valid();
      for (const body of [noQuery, noCollection, { ...valid(), limit: 'ten' }]) expectAnswer(operationId, await search(body), 422);
    });

    it('400 for a tenant on a collection that is not multi-tenant', async () => {
      const { prisma } = world.platform.services.database;
      const org = await prisma.organization.findUniqueOrThrow({ where: { name: 'default' } });
      await prisma.collection.upsert({
        where: { organizationId_name: { organizationId: org.id, name: 'Library' } },
        create: { organizationId: org.id, name: 'Library', multiTenant: false },
        update: {},
      });
      const answer = await search({ ...valid(), collection: 'Library' });
      expectAnswer(operationId, answer, 400);
      expect(answer.body.detail).toMatch(/not multi-tenant/);
    });

    it.each([
      ['a string', 'high'],
      ['a boolean', true],
      ['above 1', 1.5],
      ['below 0', -0.1],
    ])('422 for a certainty that is %s', async (_name, certainty) => {
      const answer = await search({ ...valid(), certainty });
      expectAnswer(operationId, answer, 422);
    });
  });

  it.each(['getRecommendations', 'getRecommendationsVerbose'] as const)('%s: 403 empty query, 400 invalid collection and tenant, 422 bad threshold', async (operationId) => {
    const path = operationId === 'getRecommendations' ? '/ai/v1/data/items/recommendations/base' : '/ai/v1/data/items/recommendations/verbose';
    const recommend = (body: unknown) => post(world.platform, path, body);
    expectAnswer(operationId, await recommend({ ...valid(), query: ' ' }), 403);
    expectAnswer(operationId, await recommend({ ...valid(), collection: '' }), 403);
    expectAnswer(operationId, await recommend({ ...valid(), collection: 'Nope' }), 400);
    expectAnswer(operationId, await recommend({ query: 'rest', collection: 'GlooProd' }), 400);
    expectAnswer(operationId, await recommend({ ...valid(), tenant: 'No Such Press' }), 400);
    expectAnswer(operationId, await recommend({ ...valid(), publishers: ['No Such Press'] }), 400);
    expectAnswer(operationId, await recommend({ ...valid(), publishers: [world.foreignPublisherName] }), 403);
    expectAnswer(operationId, await recommend({ ...valid(), certainty_threshold: 'high' }), 422);
    expectAnswer(operationId, await recommend({ ...valid(), item_count: 51 }), 422);
  });

  it('getAffiliateReferencedItems: 403 empty query, 400 unknown publisher, 403 foreign publisher', async () => {
    const affiliates = (body: unknown) => post(world.platform, '/ai/v1/data/affiliates/referenced-items', body);
    expectAnswer('getAffiliateReferencedItems', await affiliates({ query: '' }), 403);
    expectAnswer('getAffiliateReferencedItems', await affiliates({ query: 'rest', publishers: ['No Such Press'] }), 400);
    expectAnswer('getAffiliateReferencedItems', await affiliates({ query: 'rest', publishers: [world.foreignPublisherName] }), 403);
  });

  it('publishers: up to 1,000 names, resolved at once; 1,001 is 422', async () => {
    const many = (name: (i: number) => string, count = 1000) => Array.from({ length: count }, (_, i) => name(i));
    const calls = [
      ['getRecommendations', (publishers: string[]) => post(world.platform, '/ai/v1/data/items/recommendations/base', { ...valid(), publishers })],
      ['getAffiliateReferencedItems', (publishers: string[]) => post(world.platform, '/ai/v1/data/affiliates/referenced-items', { query: 'rest', publishers })],
    ] as const;
    for (const [operationId, call] of calls) {
      const unknown = await call(many((i) => `Unknown Press ${i}`));
      expectAnswer(operationId, unknown, 400);
      expect(unknown.body.detail).toContain('"Unknown Press 0"');
      expect(unknown.body.detail).toContain('"Unknown Press 999"');
      // The same name 1,000 times is one publisher; the request goes on to retrieval (503 where there is no pgvector).
      const repeated = await call(many(() => world.publisherName));
      expect([200, 503], repeated.text).toContain(repeated.status);
      expectAnswer(operationId, await call(many(() => world.publisherName, 1001)), 422);
    }
  });

  return () => world;
}

describe('search request rules on PGlite', () => {
  requestRules(() => startTestPlatform());
});

describePostgres('search request rules on PostgreSQL', () => {
  const database = useTestDatabase('search_rules');
  const world = requestRules(() => startTestPlatform({ databaseUrl: database.url }));

  it.skipIf(pgvector)(`answers a valid search 503: semantic search needs pgvector${WITHOUT_PGVECTOR}`, async () => {
    expect(world().platform.services.database.capabilities.vector).toBe(false);
    for (const [operationId, path] of SEARCH_PATHS) {
      const answer = await post(world().platform, path, { query: 'rest', collection: 'GlooProd', tenant: world().publisherName });
      expectAnswer(operationId, answer, 503);
      expect(answer.body.detail).toMatch(/pgvector/);
    }
    expectAnswer('getRecommendations', await post(world().platform, '/ai/v1/data/items/recommendations/base', { query: 'rest', collection: 'GlooProd', tenant: world().publisherName }), 503);
  });

  it.skipIf(pgvector)(`indexes passages without vectors there, so the item is still complete${WITHOUT_PGVECTOR}`, async () => {
    const { chunkIndex, database } = world().platform.services;
    const publisher = await database.prisma.publisher.findUniqueOrThrow({ where: { name: world().publisherName } });
    const item = await database.prisma.item.create({ data: { publisherId: publisher.id, fileName: 'pg.md', status: 'EMBEDDING' } });
    const space = await chunkIndex.embeddingSpace(publisher.id);
    const embedding = Array.from({ length: space.dimensions }, (_, i) => (i === 0 ? 1 : 0));
    await chunkIndex.replaceItemChunks(item.id, space, [{ ordinal: 0, content: 'A passage on PostgreSQL', tokenCount: 4, embedding }]);
    expect(await database.prisma.chunk.count({ where: { itemId: item.id } })).toBe(1);
    expect((await database.prisma.item.findUniqueOrThrow({ where: { id: item.id } })).status).toBe('COMPLETED');
  });
});

// ------------------------------------------------------- finding passages (needs pgvector)

/** Finding passages, on a platform whose database has pgvector. */
function findingPassages(start: () => Promise<TestPlatform>) {
  let world: World;
  let items: Record<string, string>;

  /** Indexes an item's passages through the platform's own seam and embedder (the local model). */
  async function indexItem(publisherName: string, title: string, passages: string[], extra: { type?: string; author?: string[] } = {}) {
    const publisher = await world.platform.services.database.prisma.publisher.findUniqueOrThrow({ where: { name: publisherName } });
    const data = { fileName: `${title}.md`, title, publicationDate: 'March 2021', itemSummary: `${title} summary`, ...extra };
    return (await indexContent(world.platform, publisher.id, passages, data)).id;
  }

  beforeAll(async () => {
    world = await buildWorld(await start());
    items = {
      sleep: await indexItem(world.publisherName, 'Sleep for new parents', [
        'Newborns wake often at night; parents can take turns so each gets a longer stretch of sleep.',
        'A short nap in the afternoon helps tired parents recover from broken nights.',
        'Keeping the bedroom dark and cool helps both the baby and the parents sleep.',
      ], { type: 'article', author: ['Ann Rest'] }),
      naps: await indexItem(world.publisherName, 'Napping well', ['A short nap in the afternoon restores attention for tired adults.'], { type: 'book' }),
      bread: await indexItem(world.publisherName, 'Sourdough basics', ['Feed the sourdough starter with flour and water every day before baking bread.'], { type: 'article' }),
      second: await indexItem(world.secondPublisherName, 'Rest for caregivers', ['Caregivers and parents need sleep and rest too; ask friends to help at night.'], { type: 'article' }),
      foreign: await indexItem(world.foreignPublisherName, 'Foreign sleep guide', ['Newborns wake often at night; parents can take turns so each gets sleep.'], { type: 'article' }),
    };
  }, 120_000);
  afterAll(() => world?.platform.close());

  const search = (body: Record<string, unknown>) => post(world.platform, '/ai/v1/data/search', { collection: 'GlooProd', tenant: world.publisherName, ...body });

  it('finds the passages like the query, best first, in the contract shape', async () => {
    const answer = await search({ query: 'how can exhausted parents of a baby get more sleep at night', certainty: 0.5, limit: 3 });
    expectAnswer('searchCollection', answer, 200);
    expect(answer.body.data.length).toBeGreaterThan(0);
    expect(answer.body.data.length).toBeLessThanOrEqual(3);
    const [first] = answer.body.data;
    expect(first).toMatchObject({
      collection: 'GlooProd',
      properties: { item_id: items.sleep, item_title: 'Sleep for new parents', publisher: world.publisherName, publication_date: 'March 2021', type: 'article', author: ['Ann Rest'] },
    });
    expect(first.metadata.certainty).toBeCloseTo(1 - first.metadata.distance / 2, 10);
    const scores = answer.body.data.map((h: any) => h.metadata.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(answer.body.intent).toBeNull();
  });

  it('the alias answers the same', async () => {
    const body = { query: 'sourdough starter', collection: 'GlooProd', tenant: world.publisherName, certainty: 0.5 };
    const a = await post(world.platform, '/ai/v1/data/search', body);
    const b = await post(world.platform, '/ai/data/v1/search', body);
    expectAnswer('searchCollectionAlias', b, 200);
    expect(b.body.data.map((h: any) => h.uuid)).toEqual(a.body.data.map((h: any) => h.uuid));
  });

  it('reads only the tenant: another publisher of the organization, or another organization, never appears', async () => {
    const answer = await search({ query: 'parents need sleep at night', certainty: 0.5, limit: 100 });
    const found = new Set(answer.body.data.map((h: any) => h.properties.item_id));
    expect(found.has(items.sleep)).toBe(true);
    expect(found.has(items.second)).toBe(false);
    expect(found.has(items.foreign)).toBe(false);
    const other = await search({ query: 'parents need sleep at night', certainty: 0.5, tenant: world.secondPublisherName });
    expect(other.body.data.map((h: any) => h.properties.item_id)).toEqual([items.second]);
  });

  it('certainty filters as Weaviate defines it: lowering it toward 0.5 returns more', async () => {
    const counts: number[] = [];
    for (const certainty of [0.95, 0.75, 0.6, 0.5]) {
      const answer = await search({ query: 'an afternoon nap for tired people', certainty, limit: 100 });
      expectAnswer('searchCollection', answer, 200);
      expect(answer.body.data.every((h: any) => h.metadata.certainty >= certainty)).toBe(true);
      counts.push(answer.body.data.length);
    }
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts.at(-1)!).toBeGreaterThan(counts[0]!);
  });

  it('embeds a query once: a repeated search takes its vector from the cache and finds the same', async () => {
    const embed = vi.spyOn(world.platform.services.inference.gateway, 'embed');
    try {
      const query = `a cache test about an afternoon nap ${Date.now()}`;
      const first = await search({ query, certainty: 0.5 });
      const second = await search({ query, certainty: 0.5 });
      expect(embed).toHaveBeenCalledTimes(1);
      expect(second.body.data).toEqual(first.body.data);
      await search({ query: `${query} and bread`, certainty: 0.5 });
      expect(embed).toHaveBeenCalledTimes(2);
    } finally {
      embed.mockRestore();
    }
  });

  it('respects limit', async () => {
    const answer = await search({ query: 'sleep', certainty: 0, limit: 2 });
    expect(answer.body.data).toHaveLength(2);
  });

  it('zero results is 200 with an empty list', async () => {
    const answer = await search({ query: 'quantum chromodynamics of gluons', certainty: 0.99 });
    expectAnswer('searchCollection', answer, 200);
    expect(answer.body).toEqual({ data: [], intent: null });
  });

  it('a hidden item disappears at once, and comes back when shown; a deleted one is gone', async () => {
    const ids = async () => (await search({ query: 'sourdough starter flour', certainty: 0.5, limit: 100 })).body.data.map((h: any) => h.properties.item_id);
    expect(await ids()).toContain(items.bread);
    const publisher = await world.platform.services.database.prisma.publisher.findUniqueOrThrow({ where: { name: world.publisherName } });
    const patch = (visible: boolean) =>
      world.platform.api('/engine/v2/item', { method: 'PATCH', body: JSON.stringify({ publisher_id: publisher.id, item_id: items.bread, visible_in_search: visible }) });
    expect((await patch(false)).status).toBe(200);
    expect(await ids()).not.toContain(items.bread);
    expect((await patch(true)).status).toBe(200);
    expect(await ids()).toContain(items.bread);
    const deleted = await world.platform.api('/engine/v2/items', { method: 'DELETE', body: JSON.stringify({ item_ids: [items.bread] }) });
    expect(deleted.status).toBe(200);
    expect(await ids()).not.toContain(items.bread);
  });

  it('recommendations rank items by matching snippet count, then cumulative certainty', async () => {
    const answer = await post(world.platform, '/ai/v1/data/items/recommendations/base', {
      query: 'tired parents need sleep and a nap', collection: 'GlooProd', tenant: world.publisherName, certainty_threshold: 0.5,
    });
    expectAnswer('getRecommendations', answer, 200);
    const ranked = answer.body as any[];
    expect(ranked[0]).toMatchObject({ item_id: items.sleep, snippet_count: 3, publisher: world.publisherName, item_summary: 'Sleep for new parents summary' });
    for (let i = 1; i < ranked.length; i++) {
      const [a, b] = [ranked[i - 1], ranked[i]];
      expect(a.snippet_count > b.snippet_count || (a.snippet_count === b.snippet_count && a.cumulative_certainty >= b.cumulative_certainty)).toBe(true);
    }
    for (const item of ranked) {
      expect(item.uuids).toHaveLength(item.snippet_count);
      expect(item.cumulative_certainty).toBeCloseTo(item.uuids.reduce((s: number, u: any) => s + u.certainty, 0), 10);
      expect(item.uuids[0]).not.toHaveProperty('snippet');
    }
    expect(ranked.map((r) => r.item_id)).not.toContain(items.foreign);
  });

  it('recommendations honour item_count, min_snippet_count_per_item and media_types', async () => {
    const base = { query: 'tired parents need sleep and a nap', collection: 'GlooProd', tenant: world.publisherName, certainty_threshold: 0.5 };
    const one = await post(world.platform, '/ai/v1/data/items/recommendations/base', { ...base, item_count: 1 });
    expect(one.body.map((r: any) => r.item_id)).toEqual([items.sleep]);
    const many = await post(world.platform, '/ai/v1/data/items/recommendations/base', { ...base, min_snippet_count_per_item: 2 });
    expect(many.body.every((r: any) => r.snippet_count >= 2)).toBe(true);
    const books = await post(world.platform, '/ai/v1/data/items/recommendations/base', { ...base, media_types: ['book'] });
    expect(books.body.map((r: any) => r.item_id)).toEqual([items.naps]);
  });

  it('verbose recommendations carry the snippet text', async () => {
    const answer = await post(world.platform, '/ai/v1/data/items/recommendations/verbose', {
      query: 'sourdough', collection: 'GlooProd', tenant: world.secondPublisherName, certainty_threshold: 0.5,
    });
    expectAnswer('getRecommendationsVerbose', answer, 200);
    expect(answer.body[0].uuids[0].snippet).toBe('Caregivers and parents need sleep and rest too; ask friends to help at night.');
  });

  it("affiliates' referenced items span the organization's publishers, never another organization's", async () => {
    const answer = await post(world.platform, '/ai/v1/data/affiliates/referenced-items', { query: 'parents need sleep at night', certainty_threshold: 0.5 });
    expectAnswer('getAffiliateReferencedItems', answer, 200);
    const ids = answer.body.map((r: any) => r.item_id);
    expect(ids).toEqual(expect.arrayContaining([items.sleep, items.second]));
    expect(ids).not.toContain(items.foreign);
    const narrowed = await post(world.platform, '/ai/v1/data/affiliates/referenced-items', {
      query: 'parents need sleep at night', certainty_threshold: 0.5, publishers: [world.secondPublisherName],
    });
    expect(narrowed.body.map((r: any) => r.item_id)).toEqual([items.second]);
  });
}

describe('search and recommendations on PGlite (pgvector)', () => {
  findingPassages(() => startTestPlatform());
});

describePostgres('search and recommendations on PostgreSQL', () => {
  const database = useTestDatabase('search_finding');
  describe.skipIf(!pgvector)(`with pgvector${NEEDS_PGVECTOR}`, () => {
    findingPassages(() => startTestPlatform({ databaseUrl: database.url }));
  });
});
