// The query embedder is warmed at start in the background (LOCAL_EMBEDDER_WARM, issue 25):
// the server listens and answers its health check without waiting for the model, which loads
// in its own thread; an idle server that does not warm holds no model until first use, and
// one whose search embeds with an upstream model warms nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

const LOADED = 'local embedding model loaded for queries';

async function threads(platform: TestPlatform): Promise<Record<string, number>> {
  const metrics = await (await platform.mgmt('/api/v1/metrics')).text();
  return Object.fromEntries([...metrics.matchAll(/^local_embedder_threads\{lane="(\w+)"\} (\d+)$/gm)].map(([, lane, n]) => [lane, Number(n)]));
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out');
  }
}

describe('warming the local embedding model at start', { timeout: 120_000 }, () => {
  let platform: TestPlatform | undefined;
  afterEach(async () => {
    await platform?.close();
    platform = undefined;
  });

  it('loads the query thread in the background: start and health do not wait for it', async () => {
    platform = await startTestPlatform({ localEmbedderWarm: true });
    // Start is over and the model is still loading in its thread.
    expect(platform.logs.some((line) => line.includes(LOADED))).toBe(false);
    expect((await platform.mgmt('/api/v1/health')).status).toBe(200);
    expect(await threads(platform)).toEqual({ passages: 0, queries: 1 });
    await until(() => platform!.logs.some((line) => line.includes(LOADED)), 60_000);
    // Warmed, the query thread answers an embedding at once: the model is not loaded again.
    const res = await platform.api('/ai/v2/embeddings', { method: 'POST', body: JSON.stringify({ model: 'local-embedding', input: 'how do I reset my password?' }) });
    expect(res.status).toBe(200);
    expect(await threads(platform)).toEqual({ passages: 0, queries: 1 });
  });

  it('holds no model when off, until the first embedding', async () => {
    platform = await startTestPlatform({ localEmbedderWarm: false });
    expect(await threads(platform)).toEqual({ passages: 0, queries: 0 });
    const res = await platform.api('/ai/v2/embeddings', { method: 'POST', body: JSON.stringify({ model: 'local-embedding', input: ['a short query'] }) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { embedding: number[] }[] }).data[0].embedding).toHaveLength(512);
    expect(await threads(platform)).toEqual({ passages: 0, queries: 1 });
    expect(platform.logs.some((line) => line.includes(LOADED))).toBe(false);
  });

  it('warms nothing when search embeds with an upstream model', async () => {
    const builtIn = defaultConfig({}) as { providers: unknown[]; deployments: unknown[]; models: unknown[]; routing: object };
    const catalog = buildCatalog(
      {
        ...builtIn,
        // Never called: nothing here embeds.
        providers: [...builtIn.providers, { id: 'upstream', type: 'openai', base_url: 'http://127.0.0.1:9/v1' }],
        deployments: [...builtIn.deployments, { id: 'd-embed', provider: 'upstream', model: 'text-embedding' }],
        models: [...builtIn.models, { id: 'emb', family: 'openai', type: 'embedding', context_window: 1_000, dimensions: 8, deployments: ['d-embed'] }],
      },
      'test',
      {},
    );
    platform = await startTestPlatform({ localEmbedderWarm: true, searchEmbeddingModel: 'emb' }, { catalog });
    expect(await threads(platform)).toEqual({ passages: 0, queries: 0 });
  });
});
