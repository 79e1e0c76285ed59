// Ingestion and search through an OpenAI-compatible embedding upstream (the fake one of
// mocks/upstreams, over real HTTP) chosen with SEARCH_EMBEDDING_MODEL: the passages and the
// query are embedded there, in the model and size the collection records, and a search
// finds the passage. PGlite (pgvector; the 1536-d HNSW index of the migration applies).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { uploadForm, waitForStatus } from './ingestion.suite.js';

const MODEL = 'gloo-openai-text-embedding-3-small';
let up: FakeUpstream;
let platform: TestPlatform;

beforeAll(async () => {
  up = await startFakeOpenAI({ answer: 'unused' });
  const env = { OPENAI_API_KEY: 'sk-fake', OPENAI_BASE_URL: `${up.url}/v1` };
  platform = await startTestPlatform({ logLevel: 'silent', searchEmbeddingModel: MODEL }, { catalog: buildCatalog(defaultConfig(env), 'embedding upstream test', env) });
}, 60_000);
afterAll(async () => {
  await platform?.close();
  await up?.close();
});

const embeddingCalls = () =>
  up.requests.filter((r) => r.path.endsWith('/embeddings')).map((r) => r.body as { model: string; input: string[]; dimensions?: number });

it('embeds the passages and the query upstream, records the space, and finds the passage', async () => {
  const publisherId = platform.bootstrap!.publisherId;
  const publisher = await platform.services.database.prisma.publisher.findUniqueOrThrow({ where: { id: publisherId } });
  const content = '# Lanterns\n\nA paper lantern glows softly over the harbour at dusk.\n\n## Care\n\nKeep lantern candles away from the paper walls.';
  const res = await platform.api('/ingestion/v2/files', { method: 'POST', body: uploadForm(publisherId, [{ name: 'lanterns.md', content }]) });
  expect(res.status).toBe(200);
  const [itemId] = ((await res.json()) as { ingesting: string[] }).ingesting;
  expect(await waitForStatus(platform, itemId!)).toBe('COMPLETED');

  const passages = (await platform.services.database.prisma.chunk.findMany({ where: { itemId }, orderBy: { ordinal: 'asc' } })).map((c) => c.content);
  expect(passages).toEqual(['Lanterns\n\nA paper lantern glows softly over the harbour at dusk.', 'Lanterns › Care\n\nKeep lantern candles away from the paper walls.']);
  // Every passage went to the upstream, in the upstream's model name.
  expect(embeddingCalls().flatMap((c) => c.input)).toEqual(passages);
  expect(new Set(embeddingCalls().map((c) => c.model))).toEqual(new Set(['text-embedding-3-small']));
  const collection = await platform.services.database.prisma.collection.findFirstOrThrow({ where: { organizationId: publisher.organizationId, name: 'GlooProd' } });
  expect(collection).toMatchObject({ embeddingModel: MODEL, embeddingDimensions: 1536 });
  const [{ dims }] = await platform.services.database.prisma.$queryRaw<{ dims: number }[]>`SELECT vector_dims(embedding) AS dims FROM chunks WHERE item_id = ${itemId}::uuid LIMIT 1`;
  expect(dims).toBe(1536);

  // The fake embeds equal texts equally: the second passage's own words find it first.
  const before = embeddingCalls().length;
  const search = await platform.api('/ai/v1/data/search', { method: 'POST', body: JSON.stringify({ query: passages[1], collection: 'GlooProd', tenant: publisher.name }) });
  const body = await search.json();
  expect(search.status, JSON.stringify(body)).toBe(200);
  expect(contractProblems('searchCollection', 200, body)).toEqual([]);
  expect(body.data[0]).toMatchObject({ properties: { item_id: itemId, snippet: passages[1] } });
  expect(body.data[0].metadata.certainty).toBeCloseTo(1, 5);
  expect(embeddingCalls().slice(before).map((c) => c.input)).toEqual([[passages[1]]]);
});
