// THE REAL LOCAL MODEL: Universal Sentence Encoder lite from the npm package, loaded once for
// this file (a few seconds; no network). Everything else uses the fast HashingEmbedder.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UniversalSentenceEncoderEmbedder } from '../../../server/providers/local/local-embedder.js';

// The real loader, counted.
const loads = vi.hoisted(() => ({ count: 0 }));
vi.mock('@energetic-ai/embeddings', async (importOriginal) => {
  const original = await importOriginal<typeof import('@energetic-ai/embeddings')>();
  return { ...original, initModel: (...args: Parameters<typeof original.initModel>) => (loads.count++, original.initModel(...args)) };
});

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i], 0);

describe('UniversalSentenceEncoderEmbedder (real model)', () => {
  const embedder = new UniversalSentenceEncoderEmbedder();
  afterAll(() => embedder.close());

  const texts = [
    'How do I reset my password?',
    'I forgot my password and need to change it.',
    'The recipe needs two cups of flour and an egg.',
    'Whales are the largest mammals in the ocean.',
    'Dolphins and whales are marine mammals.',
    'The stock market closed higher today.',
    'Bake the bread at 220 degrees for thirty minutes.',
    'Our quarterly revenue grew by ten percent.',
    'Can you help me log in to my account?',
    'Mix flour, water and yeast to make dough.',
  ];

  it('loads once for concurrent first calls and embeds a batch in input order', async () => {
    // Concurrent first calls: both must resolve from one shared load.
    expect(loads.count).toBe(0);
    const [all, reversed] = await Promise.all([embedder.embed(texts), embedder.embed([...texts].reverse())]);
    expect(loads.count).toBe(1);
    expect(all).toHaveLength(texts.length);
    for (const vector of all) {
      expect(vector).toHaveLength(512);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
    }
    // Order is kept across batches: the reversed request gives the same vectors reversed.
    reversed.reverse().forEach((vector, i) => expect(cosine(vector, all[i])).toBeCloseTo(1, 5));
    const [alone] = await embedder.embed([texts[4]]);
    expect(cosine(alone, all[4])).toBeCloseTo(1, 5);

    // Meaning, not just shared words: paraphrases are closer than unrelated sentences.
    expect(cosine(all[0], all[1])).toBeGreaterThan(cosine(all[0], all[2]) + 0.15);
    expect(cosine(all[3], all[4])).toBeGreaterThan(cosine(all[3], all[5]) + 0.15);
    expect(cosine(all[2], all[9])).toBeGreaterThan(cosine(all[2], all[7]) + 0.15);
  });

  it('truncates and re-normalises for fewer dimensions, refusing more than 512', async () => {
    const [full, short] = [(await embedder.embed(['Whales are mammals.']))[0], (await embedder.embed(['Whales are mammals.'], 64))[0]];
    expect(short).toHaveLength(64);
    expect(Math.hypot(...short)).toBeCloseTo(1, 5);
    const scale = Math.hypot(...full.slice(0, 64));
    short.forEach((x, i) => expect(x).toBeCloseTo(full[i] / scale, 5));
    await expect(embedder.embed(['x'], 513)).rejects.toThrow(RangeError);
    expect(loads.count).toBe(1);
  });
});
