// The chunk index and the hybrid retriever, on PGlite (which has pgvector) and on a
// PostgreSQL that has it: passages are staged, then published in one step that makes the
// item searchable, retrieval sees only the caller's visible, searchable, live items,
// certainty filters as Weaviate defines it, and the embedding space of a collection is
// never mixed. The embedder is the lexical hashing one:
// fast and deterministic, and it embeds passages and queries alike.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EmbeddingSpace, RetrievalQuery } from '../../server/data/search/chunk-index.js';
import { Collections } from '../../server/data/search/collections.js';
import { PgChunkIndex, SEARCHABLE_STATUS } from '../../server/data/search/pg-chunk-index.js';
import { DEFAULT_RANKING, PgRetriever } from '../../server/data/search/pg-retriever.js';
import { PlannerStatistics } from '../../server/data/search/planner-statistics.js';
import { createLogger } from '../../server/logging.js';
import { HashingEmbedder } from '../../server/providers/local/hashing-embedder.js';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { NEEDS_PGVECTOR, pgvector } from './pgvector.js';

const embedder = new HashingEmbedder({ dimensions: 512 });
const SPACE: EmbeddingSpace = { model: 'local-hash-test', dimensions: 512 };

/** The suite, on a database that has pgvector; `open` gives a fresh one. */
function searchIndexSuite(open: () => Promise<Database>) {
  let db: Database;
  let index: PgChunkIndex;
  let retriever: PgRetriever;
  let org: { id: string; publisherId: string; otherPublisherId: string };
  let otherOrg: { id: string; publisherId: string };

  async function indexItem(publisherId: string, texts: string[], title = 'An item') {
    const item = await db.prisma.item.create({ data: { publisherId, fileName: `${randomUUID()}.md`, title, status: 'EMBEDDING' } });
    const vectors = await embedder.embed(texts);
    await index.replaceItemChunks(
      item.id,
      await index.embeddingSpace(publisherId),
      texts.map((content, ordinal) => ({ ordinal, content, tokenCount: content.split(' ').length, embedding: vectors[ordinal]! })),
    );
    return item;
  }

  const query = (text: string, overrides: Partial<RetrievalQuery> = {}): RetrievalQuery => ({
    organizationId: org.id,
    publisherIds: [org.publisherId, org.otherPublisherId],
    query: text,
    limit: 10,
    certainty: 0.5,
    purpose: 'search',
    ...overrides,
  });

  beforeAll(async () => {
    db = await open();
    const collections = new Collections(db.prisma, 'GlooProd', SPACE);
    index = new PgChunkIndex(db.prisma, db.capabilities, collections);
    retriever = new PgRetriever(db.prisma, db.capabilities, collections, async (space, text) => {
      expect(space).toEqual(SPACE);
      return (await embedder.embed([text], space.dimensions))[0]!;
    });
    const o = await db.prisma.organization.create({ data: { name: 'search-org' } });
    const p1 = await db.prisma.publisher.create({ data: { name: 'Search Pub One', organizationId: o.id } });
    const p2 = await db.prisma.publisher.create({ data: { name: 'Search Pub Two', organizationId: o.id } });
    org = { id: o.id, publisherId: p1.id, otherPublisherId: p2.id };
    const b = await db.prisma.organization.create({ data: { name: 'other-org' } });
    const pb = await db.prisma.publisher.create({ data: { name: 'Other Org Pub', organizationId: b.id } });
    otherOrg = { id: b.id, publisherId: pb.id };
  }, 60_000);
  afterAll(() => db?.close());

  describe('chunk index', () => {
    it('records the space on first use and writes passages that make the item searchable', async () => {
      expect(db.capabilities.vector).toBe(true);
      expect(await index.embeddingSpace(org.publisherId)).toEqual(SPACE);
      const item = await indexItem(org.publisherId, ['Gardening tomatoes in raised beds', 'Watering schedules for summer heat']);
      const row = await db.prisma.item.findUniqueOrThrow({ where: { id: item.id } });
      expect(row).toMatchObject({ status: SEARCHABLE_STATUS, chunkCount: 2 });
      const chunks = await db.prisma.$queryRaw<{ ordinal: number; embedding_model: string; dims: number }[]>`
        SELECT ordinal, embedding_model, vector_dims(embedding) AS dims FROM chunks WHERE item_id = ${item.id}::uuid ORDER BY ordinal`;
      expect(chunks).toEqual([
        { ordinal: 0, embedding_model: SPACE.model, dims: 512 },
        { ordinal: 1, embedding_model: SPACE.model, dims: 512 },
      ]);
    });

    it('replaces the passages of an item: the old set goes, the new one comes', async () => {
      const item = await indexItem(org.publisherId, ['first version about lighthouses']);
      const vectors = await embedder.embed(['second version about submarines', 'and deep sea trenches']);
      await index.replaceItemChunks(item.id, SPACE, [
        { ordinal: 0, content: 'second version about submarines', tokenCount: 4, embedding: vectors[0]! },
        { ordinal: 1, content: 'and deep sea trenches', tokenCount: 4, embedding: vectors[1]! },
      ]);
      const contents = (await db.prisma.chunk.findMany({ where: { itemId: item.id }, orderBy: { ordinal: 'asc' } })).map((c) => c.content);
      expect(contents).toEqual(['second version about submarines', 'and deep sea trenches']);
      expect((await retriever.retrieve(query('lighthouses', { certainty: 0.55 }))).map((p) => p.itemId)).not.toContain(item.id);
      expect((await retriever.retrieve(query('submarines deep sea', { certainty: 0.55 }))).map((p) => p.itemId)).toContain(item.id);
    });

    it('never mixes spaces: passages of another model or size are refused', async () => {
      const item = await db.prisma.item.create({ data: { publisherId: org.publisherId, fileName: 'x.md' } });
      const [v] = await embedder.embed(['text']);
      await expect(index.replaceItemChunks(item.id, { model: 'another-model', dimensions: 512 }, [{ ordinal: 0, content: 'text', tokenCount: 1, embedding: v! }])).rejects.toThrow(/collection holds/);
      await expect(index.replaceItemChunks(item.id, SPACE, [{ ordinal: 0, content: 'text', tokenCount: 1, embedding: [1, 0, 0] }])).rejects.toThrow(/dimensions/);
      expect(await db.prisma.chunk.count({ where: { itemId: item.id } })).toBe(0);
      expect((await db.prisma.item.findUniqueOrThrow({ where: { id: item.id } })).status).toBe('QUEUED');
    });

    it('does not write passages back for an item deleted meanwhile', async () => {
      const item = await db.prisma.item.create({ data: { publisherId: org.publisherId, fileName: 'gone.md', deletedAt: new Date() } });
      const [v] = await embedder.embed(['ghost passage']);
      await index.replaceItemChunks(item.id, SPACE, [{ ordinal: 0, content: 'ghost passage', tokenCount: 2, embedding: v! }]);
      expect(await db.prisma.chunk.count({ where: { itemId: item.id } })).toBe(0);
    });
  });

  describe('retriever', () => {
    it('finds the passage like the query, best first, with certainty (1 + cosine) / 2', async () => {
      const item = await indexItem(org.otherPublisherId, ['Baking sourdough bread with a starter', 'Cleaning a cast iron pan'], 'Kitchen');
      const passages = await retriever.retrieve(query('sourdough bread starter'));
      expect(passages[0]).toMatchObject({ itemId: item.id, ordinal: 0, publisherName: 'Search Pub Two', itemTitle: 'Kitchen' });
      for (const p of passages) {
        expect(p.certainty).toBeCloseTo(1 - p.distance / 2, 10);
        expect(p.certainty).toBeGreaterThanOrEqual(0.5);
      }
      const [q] = await embedder.embed(['sourdough bread starter']);
      const [d] = await embedder.embed(['Baking sourdough bread with a starter']);
      const cosine = q!.reduce((sum, x, i) => sum + x * d![i]!, 0);
      expect(passages[0]!.certainty).toBeCloseTo((1 + cosine) / 2, 5);
    });

    it('filters by certainty: raising it returns fewer, lowering it toward 0.5 more', async () => {
      const loose = await retriever.retrieve(query('bread', { certainty: 0.5 }));
      const strict = await retriever.retrieve(query('bread', { certainty: 0.99 }));
      expect(loose.length).toBeGreaterThan(strict.length);
      expect(strict.every((p) => p.certainty >= 0.99)).toBe(true);
    });

    it('sees only the given publishers of the caller organization', async () => {
      const foreign = await indexItem(otherOrg.publisherId, ['Baking sourdough bread with a starter']);
      const mine = await retriever.retrieve(query('sourdough bread starter'));
      expect(mine.map((p) => p.itemId)).not.toContain(foreign.id);
      // Even a publisher id of another organization passed in by mistake finds nothing.
      const smuggled = await retriever.retrieve(query('sourdough bread starter', { publisherIds: [otherOrg.publisherId] }));
      expect(smuggled).toEqual([]);
      const onlyOne = await retriever.retrieve(query('sourdough bread starter', { publisherIds: [org.publisherId] }));
      expect(onlyOne.every((p) => p.publisherId === org.publisherId)).toBe(true);
    });

    it('drops an item at once when it is hidden, and answers by purpose', async () => {
      const item = await indexItem(org.publisherId, ['Migratory patterns of arctic terns']);
      expect((await retriever.retrieve(query('arctic terns migration'))).map((p) => p.itemId)).toContain(item.id);
      await db.prisma.item.update({ where: { id: item.id }, data: { visibleInSearch: false } });
      expect((await retriever.retrieve(query('arctic terns migration'))).map((p) => p.itemId)).not.toContain(item.id);
      expect((await retriever.retrieve(query('arctic terns migration', { purpose: 'chat' }))).map((p) => p.itemId)).toContain(item.id);
      await db.prisma.item.update({ where: { id: item.id }, data: { deletedAt: new Date() } });
      expect((await retriever.retrieve(query('arctic terns migration', { purpose: 'chat' }))).map((p) => p.itemId)).not.toContain(item.id);
    });

    it('skips items whose indexing is not finished', async () => {
      const item = await indexItem(org.publisherId, ['Volcanic soil and vineyards']);
      await db.prisma.item.update({ where: { id: item.id }, data: { status: 'EMBEDDING' } });
      expect((await retriever.retrieve(query('volcanic soil vineyards'))).map((p) => p.itemId)).not.toContain(item.id);
    });

    it('passages staged for an item still being indexed never take a searchable passage\'s place', async () => {
      const live = await indexItem(org.publisherId, ['Harbour seals resting on the rocks']);
      // 30 staged passages that match the query better than the live one, with a candidate
      // pool of 10: were they candidates, the live passage would never reach the fusion.
      const staging = await db.prisma.item.create({ data: { publisherId: org.publisherId, fileName: 'staging.md', status: 'EMBEDDING' } });
      const text = 'harbour seals rocks resting';
      const [v] = await embedder.embed([text]);
      expect(await index.stage(staging.id, SPACE, Array.from({ length: 30 }, (_, ordinal) => ({ ordinal, content: text, tokenCount: 4, embedding: v! })), { first: true })).toBe(true);
      const narrow = new PgRetriever(db.prisma, db.capabilities, new Collections(db.prisma, 'GlooProd', SPACE), async (_space, q) => (await embedder.embed([q]))[0]!, { ...DEFAULT_RANKING, vectorCandidates: 10, documentCandidates: 10 });
      for (const mode of ['vector', 'text', 'hybrid'] as const) {
        const found = await narrow.retrieve(query(text, { mode, limit: 1 }));
        expect(found.map((p) => p.itemId), mode).toEqual([live.id]);
      }
      // Published, they are the item's content, searchable at once.
      expect(await index.publish(staging.id, 30)).toBe(true);
      expect((await narrow.retrieve(query(text, { limit: 1 })))[0]?.itemId).toBe(staging.id);
      expect(await db.prisma.item.findUniqueOrThrow({ where: { id: staging.id } })).toMatchObject({ status: SEARCHABLE_STATUS, chunkCount: 30 });
    });

    it('publishes exactly the staged set; a visibility patch made while staging reaches the passages', async () => {
      const item = await db.prisma.item.create({ data: { publisherId: org.publisherId, fileName: 'patched.md', status: 'EMBEDDING' } });
      const [v] = await embedder.embed(['patched while staging']);
      const chunk = (ordinal: number) => ({ ordinal, content: 'patched while staging', tokenCount: 3, embedding: v! });
      await index.stage(item.id, SPACE, [chunk(0), chunk(1)], { first: true });
      // Hidden from search before any passage was there to update (as a patch sees it).
      await db.prisma.item.update({ where: { id: item.id }, data: { visibleInSearch: false } });
      await expect(index.publish(item.id, 3)).rejects.toThrow(/2 passages staged, 3 expected/);
      await index.stage(item.id, SPACE, [chunk(2)], { first: false });
      expect(await index.publish(item.id, 3)).toBe(true);
      expect(await db.prisma.chunk.findMany({ where: { itemId: item.id }, select: { visibleInSearch: true } })).toEqual([{ visibleInSearch: false }, { visibleInSearch: false }, { visibleInSearch: false }]);
      // A new first batch starts the set afresh.
      await index.stage(item.id, SPACE, [chunk(0)], { first: true });
      expect(await db.prisma.chunk.count({ where: { itemId: item.id } })).toBe(1);
    });

    it('ranks by vectors alone, words alone or both', async () => {
      for (const mode of ['vector', 'text', 'hybrid'] as const) {
        const passages = await retriever.retrieve(query('cast iron pan', { mode }));
        expect(passages[0]?.content, mode).toBe('Cleaning a cast iron pan');
      }
      // Words the text list cannot match leave only the vector list.
      expect(await retriever.retrieve(query('zzzqqq', { mode: 'text' }))).toEqual([]);
    });

    it('words alone: Okapi BM25 over whole documents, with the statistics of the tenants searched', async () => {
      // A word in every document of one tenant tells nothing there; in the other, where it is
      // rare, it decides. Each tenant ranks by its own document frequencies.
      const [a, b] = await Promise.all(['BM25 Tenant A', 'BM25 Tenant B'].map((name) => db.prisma.publisher.create({ data: { name, organizationId: org.id } })));
      const common = await Promise.all(Array.from({ length: 6 }, (_, i) => indexItem(a!.id, [`kestrel report number ${i} about the weather`])));
      const aRare = await indexItem(a!.id, ['a note on the merlin, with little else']);
      await indexItem(b!.id, ['merlin sightings on the moor', 'merlin again', 'merlin once more']);
      const bRare = await indexItem(b!.id, ['one kestrel, seen from the tower window at noon']);
      await Promise.all(Array.from({ length: 5 }, (_, i) => indexItem(b!.id, [`merlin log ${i}`])));
      const top = async (publisherId: string) =>
        (await retriever.retrieve(query('kestrel merlin', { mode: 'text', certainty: 0, publisherIds: [publisherId] })))[0]?.itemId;
      expect(await top(a!.id)).toBe(aRare.id);
      expect(await top(b!.id)).toBe(bRare.id);
      expect(common).toHaveLength(6);
    });

    it('words alone: an identifier is matched whole before its parts, and a document holding the words across passages is found', async () => {
      const exact = await indexItem(org.publisherId, ['Set max_wal_senders to the number of standby servers plus one.']);
      const parts = await indexItem(org.publisherId, ['The max number of senders is limited; the WAL is written first.', 'More about the wal and max senders.']);
      const spread = await indexItem(org.publisherId, ['Quokkas live on Rottnest island.', 'Unrelated middle passage.', 'Their diet is mostly grasses and leaves.']);
      const ranked = (await retriever.retrieve(query('max_wal_senders', { mode: 'text', certainty: 0 }))).map((p) => p.itemId);
      expect(ranked.indexOf(exact.id)).toBe(0);
      expect(ranked).toContain(parts.id);
      // No passage holds both words; the document does, and its passages are returned.
      const found = await retriever.retrieve(query('quokka diet', { mode: 'text', certainty: 0 }));
      expect(found[0]?.itemId).toBe(spread.id);
    });

    it('keeps each document\'s postings equal to the sum of its passages, and forgets them with its passages', async () => {
      const postings = async (itemId: string) =>
        Object.fromEntries((await db.prisma.itemTerm.findMany({ where: { itemId }, orderBy: { term: 'asc' } })).map((t) => [t.term, [t.tf, t.docTerms, t.publisherId]]));
      const item = await indexItem(org.publisherId, ['Tawny owls hunt at night.', 'Owls: tawny, barn and little owls.'], 'Owls of the night');
      const terms = await postings(item.id);
      expect(terms.owl).toEqual([3, 9, org.publisherId]);
      expect(terms.tawni).toEqual([2, 9, org.publisherId]);
      const row = await db.prisma.item.findUniqueOrThrow({ where: { id: item.id } });
      expect(row.termCount).toBe(9);
      expect(row.titleTerms.slice(0, 2)).toEqual(['owl', 'night']);
      // Re-indexing starts afresh: the earlier postings go with the earlier passages.
      const [v] = await embedder.embed(['Barn owls only.']);
      await index.stage(item.id, SPACE, [{ ordinal: 0, content: 'Barn owls only.', tokenCount: 3, embedding: v! }], { first: true });
      expect(await postings(item.id)).toEqual({});
      await index.publish(item.id, 1);
      expect(Object.keys(await postings(item.id))).toEqual(['barn', 'owl']);
      // Moved to another publisher (a patch), its postings follow; deleted, they go.
      await db.prisma.$transaction((tx) => tx.chunk.updateMany({ where: { itemId: item.id }, data: { publisherId: org.otherPublisherId } }));
      expect(Object.values(await postings(item.id)).every(([, , publisher]) => publisher === org.otherPublisherId)).toBe(true);
      await db.prisma.chunk.deleteMany({ where: { itemId: item.id } });
      expect(await postings(item.id)).toEqual({});
      expect((await db.prisma.item.findUniqueOrThrow({ where: { id: item.id } })).termCount).toBe(0);
    });

    it('a title holding the query\'s exact name ranks its document above a near miss with the same words', async () => {
      const right = await indexItem(org.publisherId, ['Rebuilds one or more indexes, replacing the old copy of the index.'], 'REINDEX');
      const near = await indexItem(org.publisherId, ['Builds an index on a table; the index can be rebuilt later.'], 'CREATE INDEX');
      const ranked = (await retriever.retrieve(query('reindex a table', { mode: 'text', certainty: 0 }))).map((p) => p.itemId);
      expect(ranked.indexOf(right.id)).toBeLessThan(ranked.indexOf(near.id));
    });

    it('gathers the planner statistics once the index has grown, so that searches use the HNSW index', async () => {
      const logger = createLogger('silent');
      const statistics = new PlannerStatistics(db.prisma, logger);
      const known = async () => (await db.prisma.$queryRaw<{ n: number }[]>`SELECT reltuples::int AS n FROM pg_class WHERE relname = 'chunks'`)[0]!.n;
      await statistics.refresh();
      const before = await known();
      const counted = new PgChunkIndex(db.prisma, db.capabilities, new Collections(db.prisma, 'GlooProd', SPACE), statistics);
      const item = await db.prisma.item.create({ data: { publisherId: org.publisherId, fileName: 'many.md', status: 'EMBEDDING' } });
      const vectors = await embedder.embed(Array.from({ length: 520 }, (_, i) => `passage number ${i} about tide tables`));
      const spy = vi.spyOn(statistics, 'refresh');
      await counted.replaceItemChunks(item.id, SPACE, vectors.map((embedding, ordinal) => ({ ordinal, content: `passage number ${ordinal} about tide tables`, tokenCount: 6, embedding })));
      expect(spy).toHaveBeenCalledTimes(1);
      await spy.mock.results[0]!.value;
      expect(await known()).toBe(before + 520);
      await db.prisma.chunk.deleteMany({ where: { itemId: item.id } });
    });

    it('returns nothing for an organization that has indexed nothing', async () => {
      const o = await db.prisma.organization.create({ data: { name: 'empty-org' } });
      const p = await db.prisma.publisher.create({ data: { name: 'Empty Pub', organizationId: o.id } });
      expect(await retriever.retrieve(query('anything', { organizationId: o.id, publisherIds: [p.id] }))).toEqual([]);
    });

    it('sets its HNSW scan to the candidate count, for its own statement only', async () => {
      // Last: 80 passages alike make the graph a poor guide for the other tests' queries.
      // Distinct ones: HNSW graphs lose near-duplicates (pgvector's duplicates caveat).
      const birds = 'gannet puffin tern gull shag eider skua fulmar petrel kittiwake'.split(' ');
      const weather = 'fog gale calm drizzle squall frost haze sleet'.split(' ');
      await indexItem(org.publisherId, Array.from({ length: 80 }, (_, i) => `Lighthouse log: ${birds[i % 10]} seen in ${weather[Math.floor(i / 10)]}`));
      // pgvector's default ef_search (40), without iterative scans, would stop the scan at 40.
      const wide = new PgRetriever(db.prisma, db.capabilities, new Collections(db.prisma, 'GlooProd', SPACE), async (_space, q) => (await embedder.embed([q]))[0]!, { ...DEFAULT_RANKING, vectorCandidates: 60 });
      const found = await wide.retrieve(query('lighthouse log', { mode: 'vector', limit: 60, certainty: 0 }));
      expect(found).toHaveLength(60);
      const [after] = await db.prisma.$queryRawUnsafe<{ ef: string; iterative: string }[]>(
        `SELECT current_setting('hnsw.ef_search') AS ef, current_setting('hnsw.iterative_scan') AS iterative`,
      );
      expect(after).toEqual({ ef: '40', iterative: 'off' });
    });
  });
}

describe('on PGlite', () => {
  searchIndexSuite(() => openDatabase({ dataDir: 'memory://', logger: createLogger('silent') }));
});

describePostgres('on PostgreSQL', () => {
  const database = useTestDatabase('search_index');
  describe.skipIf(!pgvector)(`with pgvector${NEEDS_PGVECTOR}`, () => {
    searchIndexSuite(() => openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger: createLogger('silent') }));
  });
});
