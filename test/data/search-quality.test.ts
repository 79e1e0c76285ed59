// Hybrid ranking must beat vectors alone and full text alone on the labelled retrieval set
// (test/fixtures/retrieval; the whole set is measured by `npm run eval:retrieval`). Here one
// tenant's passages and its look-up and paraphrase queries keep it cheap, with the platform's
// default local embedder (Universal Sentence Encoder lite), on PGlite (pgvector).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildEvalIndex, evaluate, loadRetrievalSet, MODES, type EvalIndex, type Scores } from '../../scripts/eval-retrieval.js';
import type { RankingMode } from '../../server/data/search/chunk-index.js';
import { createLocalEmbedder } from '../../server/providers/local/local-embedder.js';

const TENANT = 'Northwind Guides';
const set = loadRetrievalSet();
// The other tenant's twins of this tenant's passages come along: a leak across tenants would find them.
const documents = set.documents.filter((d) => d.tenant === TENANT || d.kind === 'twin');
const queries = set.queries.filter((q) => q.tenant === TENANT && (q.style === 'lookup' || q.style === 'paraphrase'));
const embedder = createLocalEmbedder();
let index: EvalIndex;
const scores = {} as Record<RankingMode, Scores>;

beforeAll(async () => {
  index = await buildEvalIndex(documents, embedder);
  for (const mode of MODES) scores[mode] = await evaluate(index, queries, mode);
  console.log(`retrieval subset (${documents.length} passages, ${queries.length} queries):`, JSON.stringify(scores));
}, 300_000);
afterAll(async () => {
  await index?.close();
  await embedder.close?.();
});

it('the labelled set is what it claims: two tenants, at least 200 labelled queries, near-miss negatives', () => {
  expect(set.tenants).toHaveLength(2);
  expect(set.queries.length).toBeGreaterThanOrEqual(200);
  const ids = new Set(set.documents.map((d) => d.id));
  for (const q of set.queries) for (const id of Object.keys(q.relevant)) expect(ids.has(id), q.id).toBe(true);
  expect(set.documents.filter((d) => d.kind === 'near-miss').length).toBeGreaterThanOrEqual(60);
});

it('hybrid beats vectors alone and full text alone on nDCG@10, and recalls at least as much', () => {
  expect(scores.hybrid.ndcg).toBeGreaterThan(scores.vector.ndcg);
  expect(scores.hybrid.ndcg).toBeGreaterThan(scores.text.ndcg);
  expect(scores.hybrid.recall).toBeGreaterThanOrEqual(scores.vector.recall);
  expect(scores.hybrid.recall).toBeGreaterThanOrEqual(scores.text.recall);
});

it('no query of one tenant ever returns the other tenant\'s twin passages', async () => {
  const twins = await index.retriever.retrieve({
    organizationId: index.organizationId,
    publisherIds: [index.publisherOf.get(TENANT)!],
    query: 'unique random password for every site',
    limit: 10,
    certainty: 0,
    purpose: 'search',
  });
  const found = twins.map((p) => index.documentOf.get(p.itemId));
  expect(found[0]).toBe('b-password-manager');
  expect(documents.some((d) => d.id === 'a-password-manager-twin')).toBe(true);
  expect(found).not.toContain('a-password-manager-twin');
  expect(found.every((id) => documents.find((d) => d.id === id)?.tenant === TENANT)).toBe(true);
});
