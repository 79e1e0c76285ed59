// The retrieval evaluation's machinery: the corpus indexed through the platform's own chunk
// index (parsers, chunker, analyzer, PgChunkIndex on PGlite with pgvector), the platform's
// retriever asked each labelled query as search asks it, and the measures.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RankingMode } from '../../server/data/search/chunk-index.js';
import { Collections } from '../../server/data/search/collections.js';
import { PgChunkIndex } from '../../server/data/search/pg-chunk-index.js';
import { PlannerStatistics } from '../../server/data/search/planner-statistics.js';
import { PgRetriever, type RankingOptions } from '../../server/data/search/pg-retriever.js';
import { createLogger } from '../../server/logging.js';
import type { Embedder } from '../../server/providers/local/embedder.js';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { conversationContext, lastUserText } from '../../server/data/grounding/conversation.js';
import type { RetrievalQuery } from '../../server/data/search/chunk-index.js';
import { embeddedTexts } from '../../server/data/search/pg-retriever.js';
import { documentPassages, embedCached, type CorpusDocument, type LabelledConversation, type LabelledQuery, type QueryKind } from './corpus.js';

export const K = 10;
/** Passages asked for per query; the ranking is read as the documents they belong to, in order. */
export const PASSAGES = 50;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_INPUT_TOKENS = 2_048;

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

/** Whether a near miss's wrong document ranks above every document that answers the query. */
export function wrongFirst(ranked: string[], query: LabelledQuery): boolean {
  const rankOf = (ids: string[]) => Math.min(...ids.map((id) => ranked.indexOf(id)).filter((i) => i >= 0), Infinity);
  return rankOf(query.wrong ?? []) < rankOf(Object.keys(query.relevant).filter((id) => query.relevant[id] === 2));
}

/** The query's part: a stable half of the set by its id, so the tuning part never changes. */
export function partOf(query: LabelledQuery): 'tune' | 'held-out' {
  return createHash('sha256').update(query.id).digest()[0]! < 128 ? 'tune' : 'held-out';
}

export interface EvalIndex {
  database: Database;
  organizationId: string;
  publisherOf: Map<string, string>;
  documentOf: Map<string, string>;
  tenantOf: Map<string, string>;
  retriever(ranking: RankingOptions): PgRetriever;
  close(): Promise<void>;
}

/**
 * What the index is built from: the documents, and the code that turns them into passages
 * and terms (a change of any rebuilds the index; otherwise it is reused from .data).
 */
function fingerprint(documents: CorpusDocument[], embedder: Embedder): string {
  const hash = createHash('sha256').update(embedder.model);
  for (const doc of documents) hash.update(doc.sha256);
  const sources = ['server/data/ingestion/chunker.ts', 'server/data/ingestion/parse.ts', 'server/data/search/analyzer.ts', 'server/data/search/pg-chunk-index.ts'];
  for (const file of sources) hash.update(readFileSync(join(ROOT, file)));
  for (const migration of readdirSync(join(ROOT, 'prisma/migrations')).sort()) hash.update(migration);
  return hash.digest('hex').slice(0, 16);
}

/**
 * The corpus indexed as ingestion indexes it: one item per document (its parsed title), its
 * passages embedded (vectors cached per machine, see embedCached) and written through
 * PgChunkIndex, each tenant a publisher of one organization. The PGlite directory is kept in
 * .data and reused while nothing it was built from changed.
 */
export interface BuildOptions {
  log?: (line: string) => void;
  /** Where the index lives: by default a directory in .data kept for later runs (`memory://` for a throwaway one, as tests use). */
  dataDir?: string;
  /** Vectors kept per machine (embedCached), or embedded afresh (a fast embedder, in tests). */
  cacheVectors?: boolean;
}

export async function buildEvalIndex(documents: CorpusDocument[], embedder: Embedder, queryVectors: Map<string, number[]>, options: BuildOptions = {}): Promise<EvalIndex> {
  const log = options.log ?? (() => undefined);
  const dataDir = options.dataDir ?? join(ROOT, '.data', 'retrieval-eval', fingerprint(documents, embedder));
  const reused = existsSync(join(dataDir, 'PG_VERSION'));
  const database = await openDatabase({ dataDir, logger: createLogger('silent') });
  const space = { model: embedder.model, dimensions: embedder.nativeDimensions };
  const collections = new Collections(database.prisma, 'GlooProd', space);
  const { prisma } = database;
  const built = await prisma.collection.findFirst({ where: { name: 'GlooProd', organization: { name: 'retrieval-eval' } }, select: { organizationId: true } });
  if (!built) {
    await prisma.$executeRawUnsafe('TRUNCATE organizations CASCADE');
    const organization = await prisma.organization.create({ data: { name: 'retrieval-eval' } });
    const index = new PgChunkIndex(prisma, database.capabilities, collections);
    const parsed = await documentPassages(documents, MAX_INPUT_TOKENS);
    const texts = parsed.flatMap((d) => d.passages.map((p) => p.content));
    log(`${documents.length} documents, ${texts.length} passages: embedding (cached per machine)…`);
    const vectors =
      options.cacheVectors === false ? await embedder.embed(texts) : await embedCached(embedder, texts, (done, total) => done % 1_024 < 32 && log(`  embedded ${done} / ${total}`));
    const publishers = new Map<string, string>();
    let next = 0;
    const started = performance.now();
    for (const [i, doc] of documents.entries()) {
      if (!publishers.has(doc.tenant)) publishers.set(doc.tenant, (await prisma.publisher.create({ data: { name: doc.tenant, organizationId: organization.id } })).id);
      const { title, passages } = parsed[i]!;
      const item = await prisma.item.create({ data: { publisherId: publishers.get(doc.tenant)!, fileName: doc.id, title, status: 'EMBEDDING' } });
      await index.replaceItemChunks(
        item.id,
        space,
        passages.map((p, ordinal) => ({ ordinal, content: p.content, tokenCount: p.tokenCount, embedding: vectors[next + ordinal]! })),
      );
      next += passages.length;
      if (i % 200 === 199) log(`  indexed ${i + 1} / ${documents.length} documents (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
  } else if (reused) {
    log(`index reused from ${dataDir}`);
  }
  // As the server keeps them (search/planner-statistics.ts).
  await new PlannerStatistics(prisma, createLogger('silent')).refresh();
  const organizationId = (await prisma.organization.findFirstOrThrow({ where: { name: 'retrieval-eval' } })).id;
  const publisherOf = new Map((await prisma.publisher.findMany({ where: { organizationId } })).map((p) => [p.name, p.id]));
  const items = await prisma.item.findMany({ select: { id: true, fileName: true } });
  const documentOf = new Map(items.map((i) => [i.id, i.fileName]));
  const tenantOf = new Map(documents.map((d) => [d.id, d.tenant]));
  const embedQuery = async (_space: unknown, text: string) => {
    const vector = queryVectors.get(text);
    if (!vector) throw new Error(`no vector for query "${text}"`);
    return vector;
  };
  return {
    database,
    organizationId,
    publisherOf,
    documentOf,
    tenantOf,
    retriever: (ranking) => new PgRetriever(prisma, database.capabilities, collections, embedQuery, ranking),
    close: () => database.close(),
  };
}

export interface QueryResult {
  query: LabelledQuery;
  /** Documents in the order their first passage came. */
  ranked: string[];
}

/** Each query asked as search asks it (its tenant's publisher, PASSAGES passages), read as documents. */
export async function runQueries(index: EvalIndex, retriever: PgRetriever, queries: LabelledQuery[], mode: RankingMode, certainty: number): Promise<QueryResult[]> {
  const results: QueryResult[] = [];
  for (const query of queries) {
    const passages = await retriever.retrieve({
      organizationId: index.organizationId,
      publisherIds: [index.publisherOf.get(query.tenant)!],
      query: query.query,
      limit: PASSAGES,
      certainty,
      purpose: 'search',
      mode,
    });
    results.push({ query, ranked: [...new Set(passages.map((p) => index.documentOf.get(p.itemId)!))] });
  }
  return results;
}

/** A conversation as the grounded endpoints ask it: its last message, with or without the turns before it. */
export function conversationQuery(conversation: LabelledConversation, withContext: boolean): Pick<RetrievalQuery, 'query' | 'context'> {
  return { query: lastUserText(conversation.messages), ...(withContext && { context: conversationContext(conversation.messages) }) };
}

/** Every text the vector leg embeds for these conversations, with their context and without (the last message is one of them). */
export const conversationTexts = (conversations: LabelledConversation[]) => conversations.flatMap((c) => embeddedTexts(conversationQuery(c, true)));

/** Each conversation's last turn retrieved as grounded chat retrieves it (chat-visible passages), read as documents. */
export async function runConversations(index: EvalIndex, retriever: PgRetriever, conversations: LabelledConversation[], withContext: boolean, certainty: number): Promise<QueryResult[]> {
  const results: QueryResult[] = [];
  for (const conversation of conversations) {
    const passages = await retriever.retrieve({
      organizationId: index.organizationId,
      publisherIds: [index.publisherOf.get(conversation.tenant)!],
      ...conversationQuery(conversation, withContext),
      limit: PASSAGES,
      certainty,
      purpose: 'chat',
    });
    const query: LabelledQuery = { id: conversation.id, tenant: conversation.tenant, kind: 'paraphrase', query: lastUserText(conversation.messages), relevant: conversation.relevant };
    results.push({ query, ranked: [...new Set(passages.map((p) => index.documentOf.get(p.itemId)!))] });
  }
  return results;
}

export interface Figures {
  queries: number;
  recall: number;
  ndcg: number;
  /** Near misses: how many put a wrong document above every right one. */
  wrongFirst: number;
  /** Cross-tenant: results from another tenant (must be 0). */
  leaks: number;
}

/** The measures over a set of results (cross-tenant queries count only as leaks). */
export function figures(results: QueryResult[], tenantOf: Map<string, string>): Figures {
  const judged = results.filter((r) => r.query.kind !== 'cross-tenant');
  const mean = (f: (r: QueryResult) => number) => (judged.length ? judged.reduce((sum, r) => sum + f(r), 0) / judged.length : 0);
  return {
    queries: results.length,
    recall: mean((r) => recallAt(r.ranked, r.query.relevant)),
    ndcg: mean((r) => ndcgAt(r.ranked, r.query.relevant)),
    wrongFirst: results.filter((r) => r.query.kind === 'near-miss' && wrongFirst(r.ranked, r.query)).length,
    leaks: results.reduce((n, r) => n + r.ranked.filter((id) => tenantOf.get(id) !== r.query.tenant).length, 0),
  };
}

export const KINDS: QueryKind[] = ['paraphrase', 'identifier', 'near-miss', 'cross-tenant'];
