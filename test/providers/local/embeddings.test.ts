// The hashing embedder and the provider's embed surface (fast; the real model has its own file).
import { describe, expect, it } from 'vitest';
import { supportedDimensions } from '../../../server/providers/local/embedder.js';
import { HashingEmbedder } from '../../../server/providers/local/hashing-embedder.js';
import { createLocalProvider } from '../../../server/providers/local/local-provider.js';
import { ctx, provider } from './support.js';

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i], 0);
const norm = (v: number[]) => Math.hypot(...v);

describe('HashingEmbedder', () => {
  const embedder = new HashingEmbedder();

  it('names itself as a hashing embedder and is deterministic', async () => {
    expect(embedder.model).toBe('local-hash-embedding');
    const [a] = await embedder.embed(['The cat sat on the mat.']);
    const [b] = await new HashingEmbedder().embed(['The cat sat on the mat.']);
    expect(a).toHaveLength(embedder.nativeDimensions);
    expect(b).toEqual(a);
  });

  it('returns unit vectors, and places similar texts closer than unrelated ones', async () => {
    const [cat, cats, stocks] = await embedder.embed([
      'The cat sat on the warm mat by the fire.',
      'A cat was sitting on a mat near the fire.',
      'Quarterly stock prices fell after the earnings report.',
    ]);
    for (const v of [cat, cats, stocks]) expect(norm(v)).toBeCloseTo(1, 10);
    expect(cosine(cat, cats)).toBeGreaterThan(cosine(cat, stocks) + 0.3);
  });

  it('serves fewer dimensions by hashing into fewer buckets and refuses more', async () => {
    const [small] = await embedder.embed(['hello world, hello again'], 16);
    expect(small).toHaveLength(16);
    expect(norm(small)).toBeCloseTo(1, 10);
    expect(supportedDimensions(embedder, 16)).toBe(true);
    expect(supportedDimensions(embedder, embedder.nativeDimensions + 1)).toBe(false);
    expect(supportedDimensions(embedder, 0)).toBe(false);
    await expect(embedder.embed(['x'], 1.5)).rejects.toThrow(RangeError);
  });
});

describe('local provider embed', () => {
  it('returns one vector per input, in order, with token usage', async () => {
    const result = await provider.embed({ model: 'local-embedding', input: ['alpha beta', 'gamma'] }, ctx());
    const direct = await new HashingEmbedder().embed(['alpha beta', 'gamma']);
    expect(result.vectors).toEqual(direct);
    expect(result.promptTokens).toBe(3);
  });

  it('refuses unsupported dimensions as a bad request', async () => {
    await expect(provider.embed({ model: 'local-embedding', input: ['x'], dimensions: 100_000 }, ctx())).rejects.toMatchObject({ kind: 'bad_request' });
  });

  it('reports an embedder failure as unavailable, probes fine, and closes its embedder', async () => {
    let closed = 0;
    const broken = createLocalProvider({
      embedder: {
        model: 'broken',
        nativeDimensions: 4,
        embed: () => Promise.reject(new Error('no weights')),
        close: async () => void closed++,
      },
    });
    await expect(broken.embed({ model: 'x', input: ['x'] }, ctx())).rejects.toMatchObject({ kind: 'unavailable' });
    await expect(broken.probe(ctx())).resolves.toBeUndefined();
    await broken.close();
    expect(closed).toBe(1);
  });
});
