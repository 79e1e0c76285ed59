// THE REAL LOCAL MODEL, in worker threads (through tsx's hooks, as from source): the embedder
// the server uses. A few seconds per thread to load (longer on a busy machine: hence the
// timeouts); everything else uses the HashingEmbedder.
import { afterAll, describe, expect, it } from 'vitest';
import { SentenceEncoderEmbedder } from '../../../server/providers/local/local-embedder.js';
import { realPassages } from '../../support/passages.js';

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i], 0);
const lanes = (embedder: SentenceEncoderEmbedder) => Object.fromEntries(embedder.lanes().map(({ lane, threads }) => [lane, threads]));

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

describe('SentenceEncoderEmbedder (real model, worker threads)', { timeout: 120_000 }, () => {
  const embedder = new SentenceEncoderEmbedder({ threads: 1, queryThread: true });
  afterAll(() => embedder.close());

  it('starts no thread before it is used, nor for nothing to embed or a size it cannot give', async () => {
    expect(lanes(embedder)).toEqual({ passages: 0, queries: 0 });
    expect(await embedder.embed([])).toEqual([]);
    await expect(embedder.embed(['x'], 513)).rejects.toThrow(RangeError);
    expect(lanes(embedder)).toEqual({ passages: 0, queries: 0 });
  });

  it('embeds a short input on the query thread, off this thread', async () => {
    const [vector] = await embedder.embed(['How do I reset my password?']);
    expect(vector).toHaveLength(512);
    expect(Math.hypot(...vector)).toBeCloseTo(1, 6);
    // The package's vector of this text (sentence-encoder.test.ts pins more).
    vector.slice(0, 3).forEach((x, i) => expect(x).toBeCloseTo([-0.048459, -0.054573, 0.040226][i], 5));
    expect(lanes(embedder)).toEqual({ passages: 0, queries: 1 });
    // TensorFlow.js never loaded here: its engine lives in a global it creates on load.
    expect('_tfGlobals' in globalThis).toBe(false);
  });

  it('embeds passages on the passage threads, in batches, in input order', async () => {
    const passages = realPassages(12);
    const [all, reversed] = await Promise.all([embedder.embed(passages), embedder.embed([...passages].reverse())]);
    expect(all).toHaveLength(passages.length);
    for (const vector of all) expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
    reversed.reverse().forEach((vector, i) => expect(cosine(vector, all[i])).toBeCloseTo(1, 5));
    // The same passage alone (a long input: the passage lane too) gives the same vector.
    expect(cosine((await embedder.embed([passages[9]]))[0], all[9])).toBeCloseTo(1, 5);
    expect(lanes(embedder)).toEqual({ passages: 1, queries: 1 });
    expect('_tfGlobals' in globalThis).toBe(false);
  });

  it('captures meaning: paraphrases are closer than unrelated sentences', async () => {
    const all = await embedder.embed(texts);
    expect(cosine(all[0], all[1])).toBeGreaterThan(cosine(all[0], all[2]) + 0.15);
    expect(cosine(all[3], all[4])).toBeGreaterThan(cosine(all[3], all[5]) + 0.15);
    expect(cosine(all[2], all[9])).toBeGreaterThan(cosine(all[2], all[7]) + 0.15);
  });

  it('truncates and re-normalises for fewer dimensions', async () => {
    const [[full], [short]] = await Promise.all([embedder.embed(['Whales are mammals.']), embedder.embed(['Whales are mammals.'], 64)]);
    expect(short).toHaveLength(64);
    const scale = Math.hypot(...full.slice(0, 64));
    short.forEach((x, i) => expect(x).toBeCloseTo(full[i] / scale, 6));
  });
});

describe('SentenceEncoderEmbedder without a query thread', { timeout: 120_000 }, () => {
  const embedder = new SentenceEncoderEmbedder({ threads: 1, queryThread: false });
  afterAll(() => embedder.close());

  it('warms a passage thread, and runs a short input ahead of queued passages', async () => {
    await embedder.warm();
    expect(lanes(embedder)).toEqual({ passages: 1 });
    const finished: string[] = [];
    // Three batches on one thread; the query comes while the first runs.
    const passages = embedder.embed(realPassages(24)).then(() => finished.push('passages'));
    const query = embedder.embed(['how do I undo that?']).then(() => finished.push('query'));
    await Promise.all([passages, query]);
    expect(finished).toEqual(['query', 'passages']);
  });
});

describe('SentenceEncoderEmbedder.close', { timeout: 120_000 }, () => {
  it('stops the threads, once however often it is called; later calls fail', async () => {
    const embedder = new SentenceEncoderEmbedder({ threads: 1, queryThread: true });
    await embedder.warm();
    expect(lanes(embedder)).toEqual({ passages: 0, queries: 1 });
    await Promise.all([embedder.close(), embedder.close()]);
    expect(lanes(embedder)).toEqual({ passages: 0, queries: 0 });
    await expect(embedder.embed(['after close'])).rejects.toThrow();
    // Warming a closed embedder is not an error: there is nothing to warm.
    await expect(embedder.warm()).resolves.toBeUndefined();
  });
});
