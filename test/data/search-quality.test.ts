// Retrieval quality on real documents, in CI: the SQLite tenant of the retrieval set
// (test/fixtures/retrieval: 350 documentation pages and their 212 hand-written queries),
// with the other tenants' pages that its cross-tenant queries are about, indexed through the
// platform's parsers, chunker, analyzer and chunk index. The keyword leg must rank at least
// as well as a plain BM25 over the same documents on every kind of query, no query may find
// another tenant's page, and a grounded follow-up must retrieve better with its conversation
// than alone while a question on a new subject keeps what it finds alone. Vectors come from the lexical hashing embedder, small enough to be searched
// exactly: the local model's figures (and the whole set) are `npm run eval:retrieval`'s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentTexts, loadConversations, loadManifest, loadQueries, topicSwitches } from '../../scripts/retrieval/corpus.js';
import {
  buildEvalIndex,
  conversationTexts,
  figures,
  runConversations,
  runQueries,
  type EvalIndex,
  type QueryResult,
} from '../../scripts/retrieval/harness.js';
import { PlainBm25 } from '../../scripts/retrieval/plain-bm25.js';
import { DEFAULT_RANKING } from '../../server/data/search/pg-retriever.js';
import { HashingEmbedder } from '../../server/providers/local/hashing-embedder.js';

const TENANT = 'SQLite Docs';
const manifest = loadManifest();
const queries = loadQueries().filter((q) => q.tenant === TENANT);
const conversations = loadConversations().filter((c) => c.tenant === TENANT);
const switches = topicSwitches(conversations, queries);
const foreign = new Set(queries.flatMap((q) => q.foreign ?? []));
const documents = manifest.filter((d) => d.tenant === TENANT || foreign.has(d.id));
// 64 dimensions: no HNSW index is made for that size, so the vector leg is an exact scan.
const embedder = new HashingEmbedder({ dimensions: 64 });
let index: EvalIndex;
let keyword: QueryResult[];
let hybrid: QueryResult[];
let bm25: QueryResult[];

beforeAll(async () => {
  const texts = [...new Set([...queries.map((q) => q.query), ...conversationTexts([...conversations, ...switches])])];
  const vectors = await embedder.embed(texts);
  index = await buildEvalIndex(documents, embedder, new Map(texts.map((t, i) => [t, vectors[i]!])), { dataDir: 'memory://', cacheVectors: false });
  const retriever = index.retriever(DEFAULT_RANKING);
  keyword = await runQueries(index, retriever, queries, 'text', 0);
  hybrid = await runQueries(index, retriever, queries, 'hybrid', 0.5);
  const own = await documentTexts(documents.filter((d) => d.tenant === TENANT));
  const plain = new PlainBm25(own);
  bm25 = queries.map((query) => ({ query, ranked: plain.search(query.query, 50).map((h) => h.id) }));
}, 600_000);
afterAll(() => index?.close());

describe(`the ${TENANT} tenant of the retrieval set`, () => {
  it('is real documents and hand-written queries of every kind', () => {
    expect(documents.filter((d) => d.tenant === TENANT)).toHaveLength(350);
    expect(new Set(queries.map((q) => q.kind))).toEqual(new Set(['paraphrase', 'identifier', 'near-miss', 'cross-tenant']));
    expect(queries.length).toBeGreaterThanOrEqual(200);
  });

  it.each(['paraphrase', 'identifier', 'near-miss'] as const)('%s: the keyword leg ranks at least as well as plain BM25', (kind) => {
    const ours = figures(keyword.filter((r) => r.query.kind === kind), index.tenantOf);
    const theirs = figures(bm25.filter((r) => r.query.kind === kind), index.tenantOf);
    console.log(`${kind}: keyword leg R@10 ${ours.recall.toFixed(3)} nDCG@10 ${ours.ndcg.toFixed(3)}; plain BM25 ${theirs.recall.toFixed(3)} / ${theirs.ndcg.toFixed(3)}`);
    expect(ours.ndcg).toBeGreaterThanOrEqual(theirs.ndcg);
    expect(ours.recall).toBeGreaterThanOrEqual(theirs.recall);
  });

  it('near misses: the keyword leg puts the wrong page first no more often than plain BM25', () => {
    const near = (results: QueryResult[]) => figures(results.filter((r) => r.query.kind === 'near-miss'), index.tenantOf).wrongFirst;
    expect(near(keyword)).toBeLessThanOrEqual(near(bm25));
  });

  it('no query finds another tenant\'s page, though each cross-tenant query is about one that is indexed', () => {
    expect(figures(hybrid, index.tenantOf).leaks).toBe(0);
    expect(figures(keyword, index.tenantOf).leaks).toBe(0);
    expect([...foreign].every((id) => index.tenantOf.get(id) !== TENANT)).toBe(true);
  });

  it('a grounded follow-up retrieves better with the exchange before it than alone', async () => {
    const retriever = index.retriever(DEFAULT_RANKING);
    const alone = figures(await runConversations(index, retriever, conversations, false, 0), index.tenantOf);
    const followed = figures(await runConversations(index, retriever, conversations, true, 0), index.tenantOf);
    console.log(`follow-ups: alone nDCG@10 ${alone.ndcg.toFixed(3)}, with the conversation ${followed.ndcg.toFixed(3)}`);
    expect(followed.ndcg).toBeGreaterThan(alone.ndcg);
    expect(followed.recall).toBeGreaterThan(alone.recall);
  });

  it('a question on a new subject is not pulled back to the one before it', async () => {
    const retriever = index.retriever(DEFAULT_RANKING);
    expect(switches.length).toBeGreaterThanOrEqual(10);
    const alone = figures(await runConversations(index, retriever, switches, false, 0), index.tenantOf);
    const followed = figures(await runConversations(index, retriever, switches, true, 0), index.tenantOf);
    console.log(`topic switches: alone nDCG@10 ${alone.ndcg.toFixed(3)}, with the conversation ${followed.ndcg.toFixed(3)}`);
    // Before the earlier turns were weighted down (all their terms at half weight, one vector
    // for the whole exchange) a switch kept 0.66 of its nDCG on the whole set; now 0.8-0.85.
    expect(followed.ndcg).toBeGreaterThanOrEqual(0.75 * alone.ndcg);
  });
});
