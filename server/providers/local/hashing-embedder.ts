// A fast deterministic embedder for tests and as a last resort: feature hashing of word
// unigrams and bigrams with sub-linear TF weights, L2-normalised. It is lexical, not neural,
// and says so in its model name.
import { createHash } from 'node:crypto';
import { contentTerms, words } from './terms.js';
import { checkDimensions, normalize, type Embedder } from './embedder.js';

export class HashingEmbedder implements Embedder {
  readonly model = 'local-hash-embedding';
  readonly nativeDimensions: number;

  constructor(options: { dimensions?: number } = {}) {
    this.nativeDimensions = options.dimensions ?? 256;
  }

  async embed(texts: string[], dimensions?: number): Promise<number[][]> {
    // Hashing into fewer buckets keeps every feature, where truncating would drop most.
    const size = checkDimensions(this, dimensions);
    return texts.map((text) => normalize(this.vector(text, size)));
  }

  private vector(text: string, size: number): number[] {
    const vector = new Array<number>(size).fill(0);
    for (const [feature, count] of this.features(text)) {
      // One hash gives the bucket and a sign, so collisions cancel instead of piling up.
      const digest = createHash('sha1').update(feature).digest();
      const bucket = digest.readUInt32BE(0) % size;
      const sign = digest[4] & 1 ? 1 : -1;
      vector[bucket] += sign * (1 + Math.log(count));
    }
    return vector;
  }

  private features(text: string): Map<string, number> {
    const content = contentTerms(text);
    // Text made only of function words still deserves a vector.
    const terms = content.length > 0 ? content : words(text);
    const counts = new Map<string, number>();
    const add = (feature: string) => counts.set(feature, (counts.get(feature) ?? 0) + 1);
    terms.forEach((term, i) => {
      add(term);
      if (i > 0) add(`${terms[i - 1]} ${term}`);
    });
    return counts;
  }
}
