// Retrieval quality on the labelled set in test/fixtures/retrieval: recall@10 and nDCG@10
// for vectors alone, full-text alone and the hybrid fusion the platform serves, over all
// queries, per tenant and per kind of query. Exits non-zero unless hybrid beats both on
// recall@10 and nDCG@10 over all queries and in each tenant.
//
//   npm run eval:retrieval            # the whole set (284 queries), the local model
//
// The set: two tenants (publishers of one organization), a target passage per topic, a
// near-miss negative per topic (shares its words, not its meaning), twins of some targets in
// the other tenant (found only if tenants leak), and three queries per topic: a paraphrase
// with few shared words, a keyword query and a mixed one. Each query is labelled with its
// relevant passage (grade 2). Passages and queries are embedded by the platform's default
// local embedder (Universal Sentence Encoder lite, 512-d), in an embedded PGlite database.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RankingMode, Retriever } from '../server/data/search/chunk-index.js';
import { loadConfig } from '../server/config.js';
import { Collections } from '../server/data/search/collections.js';
import { MIN_TEXT_COVERAGE, PgChunkIndex, PgRetriever, RRF_K } from '../server/data/search/pg-chunk-index.js';
import { createLogger } from '../server/logging.js';
import type { Embedder } from '../server/providers/local/embedder.js';
import { createLocalEmbedder } from '../server/providers/local/local-embedder.js';
import { openDatabase, type Database } from '../server/storage/index.js';

export const K = 10;
const FIXTURES = fileURLToPath(new URL('../test/fixtures/retrieval/', import.meta.url));

export interface LabelledDocument {
  id: string;
  tenant: string;
  kind: 'target' | 'near-miss' | 'twin';
  text: string;
}

export interface LabelledQuery {
  id: string;
  tenant: string;
  style: 'paraphrase' | 'keyword' | 'mixed' | 'lookup';
  query: string;
  /** Document id → graded relevance (higher is more relevant); unlisted documents are 0. */
  relevant: Record<string, number>;
}

export interface RetrievalSet {
  tenants: string[];
  documents: LabelledDocument[];
  queries: LabelledQuery[];
}

export function loadRetrievalSet(): RetrievalSet {
  const { tenants, documents } = JSON.parse(readFileSync(`${FIXTURES}documents.json`, 'utf8'));
  const { queries } = JSON.parse(readFileSync(`${FIXTURES}queries.json`, 'utf8'));
  return { tenants, documents, queries };
}

/** The share of a query's relevant documents found in the first k. */
export function recallAt(ranked: string[], relevant: Record<string, number>, k = K): number {
  const wanted = Object.keys(relevant).filter((id) => relevant[id]! > 0);
  if (wanted.length === 0) return 0;
  const top = new Set(ranked.slice(0, k));
  return wanted.filter((id) => top.has(id)).length / wanted.length;
}

/** Normalised discounted cumulative gain at k, with gain 2^grade - 1. */
export function ndcgAt(ranked: string[], relevant: Record<string, number>, k = K): number {
  const dcg = (grades: number[]) => grades.slice(0, k).reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);
  const ideal = dcg(Object.values(relevant).sort((a, b) => b - a));
  return ideal === 0 ? 0 : dcg(ranked.map((id) => relevant[id] ?? 0)) / ideal;
}

export interface EvalIndex {
  retriever: Retriever;
  organizationId: string;
  publisherOf: Map<string, string>;
  documentOf: Map<string, string>;
  close(): Promise<void>;
}

/** Indexes the documents (one passage each) through the platform's own chunk index. */
export async function buildEvalIndex(documents: LabelledDocument[], embedder: Embedder): Promise<EvalIndex> {
  const database: Database = await openDatabase({ dataDir: 'memory://', logger: createLogger('silent') });
  const space = { model: 'local-embedding', dimensions: embedder.nativeDimensions };
  const collections = new Collections(database.prisma, 'GlooProd', space);
  const index = new PgChunkIndex(database.prisma, database.capabilities, collections);
  // Each mode asks for the same queries: they are embedded once.
  const queryVectors = new Map<string, Promise<number[]>>();
  const embedQuery = (s: typeof space, text: string) => {
    if (!queryVectors.has(text)) queryVectors.set(text, embedder.embed([text], s.dimensions).then((v) => v[0]!));
    return queryVectors.get(text)!;
  };
  const retriever = new PgRetriever(database.prisma, database.capabilities, collections, embedQuery);
  const organization = await database.prisma.organization.create({ data: { name: 'retrieval-eval' } });
  const publisherOf = new Map<string, string>();
  for (const tenant of new Set(documents.map((d) => d.tenant))) {
    publisherOf.set(tenant, (await database.prisma.publisher.create({ data: { name: tenant, organizationId: organization.id } })).id);
  }
  const vectors = await embedder.embed(documents.map((d) => d.text));
  const documentOf = new Map<string, string>();
  for (const [i, doc] of documents.entries()) {
    const item = await database.prisma.item.create({ data: { publisherId: publisherOf.get(doc.tenant)!, fileName: doc.id, status: 'EMBEDDING' } });
    documentOf.set(item.id, doc.id);
    await index.replaceItemChunks(item.id, space, [{ ordinal: 0, content: doc.text, tokenCount: doc.text.split(/\s+/).length, embedding: vectors[i]! }]);
  }
  return { retriever, organizationId: organization.id, publisherOf, documentOf, close: () => database.close() };
}

export interface Scores {
  recall: number;
  ndcg: number;
}

/** Mean recall@10 and nDCG@10 of one ranking mode over the queries (certainty 0: ranking only). */
export async function evaluate(index: EvalIndex, queries: LabelledQuery[], mode: RankingMode): Promise<Scores> {
  let recall = 0;
  let ndcg = 0;
  for (const q of queries) {
    const passages = await index.retriever.retrieve({
      organizationId: index.organizationId,
      publisherIds: [index.publisherOf.get(q.tenant)!],
      query: q.query,
      limit: K,
      certainty: 0,
      purpose: 'search',
      mode,
    });
    const ranked = passages.map((p) => index.documentOf.get(p.itemId)!);
    recall += recallAt(ranked, q.relevant);
    ndcg += ndcgAt(ranked, q.relevant);
  }
  return { recall: recall / queries.length, ndcg: ndcg / queries.length };
}

export const MODES: RankingMode[] = ['vector', 'text', 'hybrid'];

/**
 * Where hybrid does not beat vectors alone or text alone; empty when it beats both on both
 * measures. Beating is scoring higher, or scoring the maximum (1) where the other does too:
 * a perfect score cannot be exceeded.
 */
export function shortfalls(scores: Record<RankingMode, Scores>, scope = 'all queries'): string[] {
  const misses: string[] = [];
  for (const rival of ['vector', 'text'] as const) {
    for (const measure of ['recall', 'ndcg'] as const) {
      const [ours, theirs] = [scores.hybrid[measure], scores[rival][measure]];
      if (!(ours > theirs || ours === 1)) {
        misses.push(`${scope}: hybrid ${measure}@${K} ${ours.toFixed(3)} does not beat ${rival} ${theirs.toFixed(3)}`);
      }
    }
  }
  return misses;
}

async function main(): Promise<void> {
  const set = loadRetrievalSet();
  // As the server runs it (LOCAL_EMBEDDER_THREADS, LOCAL_EMBEDDER_QUERY_THREAD).
  const embedder = createLocalEmbedder(loadConfig());
  const started = performance.now();
  const index = await buildEvalIndex(set.documents, embedder);
  const indexed = performance.now();
  console.log(`\n${set.documents.length} passages in ${set.tenants.length} tenants, ${set.queries.length} queries; embedder ${embedder.model} (${embedder.nativeDimensions}-d), indexed in ${((indexed - started) / 1000).toFixed(1)} s\n`);
  const scopes: { name: string; queries: LabelledQuery[] }[] = [
    { name: 'all', queries: set.queries },
    ...set.tenants.map((tenant) => ({ name: tenant, queries: set.queries.filter((q) => q.tenant === tenant) })),
    ...[...new Set(set.queries.map((q) => q.style))].map((style) => ({ name: style, queries: set.queries.filter((q) => q.style === style) })),
  ];
  const results = new Map<string, Record<RankingMode, Scores>>();
  for (const scope of scopes) {
    const byMode = {} as Record<RankingMode, Scores>;
    for (const mode of MODES) byMode[mode] = await evaluate(index, scope.queries, mode);
    results.set(scope.name, byMode);
  }
  console.log(`| ranking | ${scopes.map((s) => `recall@${K} ${s.name} | nDCG@${K} ${s.name}`).join(' | ')} |`);
  console.log(`|---|${scopes.map(() => '---:|---:').join('|')}|`);
  for (const mode of MODES) {
    console.log(`| ${mode} | ${scopes.map((s) => `${results.get(s.name)![mode].recall.toFixed(3)} | ${results.get(s.name)![mode].ndcg.toFixed(3)}`).join(' | ')} |`);
  }
  // The check: all queries and each tenant (the kinds of query are shown, not required: full
  // text alone cannot find a paraphrase, nor vectors beat it on a keyword it matches exactly).
  const misses = ['all', ...set.tenants].flatMap((name) => shortfalls(results.get(name)!, name === 'all' ? 'all queries' : `tenant ${name}`));
  console.log(misses.length === 0 ? '\nCheck passed: hybrid beats vectors alone and text alone on recall@10 and nDCG@10 (or scores 1 where they do), over all queries and in each tenant.' : `\n<<< MISS >>>\n${misses.join('\n')}`);
  process.exitCode = misses.length === 0 ? 0 : 1;
  console.log(`\nFusion: reciprocal rank fusion (k = ${RRF_K}) of the top 100 by vector and by full text (passages with at least ${MIN_TEXT_COVERAGE * 100}% of the query words).`);
  await index.close();
  await embedder.close?.();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
