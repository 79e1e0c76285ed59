// The baseline every retrieval figure is printed beside: plain document-level Okapi BM25
// (k1 1.2, b 0.75), lower-cased alphanumeric words, no stemming, no stop words, per tenant.
// Deliberately what a user would write in thirty lines, so "beats BM25" means something.

const K1 = 1.2;
const B = 0.75;

const tokens = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

export class PlainBm25 {
  private readonly frequencies = new Map<string, Map<string, number>>();
  private readonly lengths = new Map<string, number>();
  private readonly documentFrequency = new Map<string, number>();
  private averageLength = 0;

  constructor(documents: Map<string, string>) {
    for (const [id, text] of documents) {
      const tf = new Map<string, number>();
      const words = tokens(text);
      for (const word of words) tf.set(word, (tf.get(word) ?? 0) + 1);
      for (const word of tf.keys()) this.documentFrequency.set(word, (this.documentFrequency.get(word) ?? 0) + 1);
      this.frequencies.set(id, tf);
      this.lengths.set(id, words.length);
      this.averageLength += words.length;
    }
    this.averageLength /= Math.max(1, documents.size);
  }

  /** Document ids, best first, with their scores (only documents holding a query word). */
  search(query: string, limit: number): { id: string; score: number }[] {
    const n = this.frequencies.size;
    const words = [...new Set(tokens(query))];
    const scores: { id: string; score: number }[] = [];
    for (const [id, tf] of this.frequencies) {
      let score = 0;
      const norm = K1 * (1 - B + (B * this.lengths.get(id)!) / this.averageLength);
      for (const word of words) {
        const f = tf.get(word);
        if (!f) continue;
        const df = this.documentFrequency.get(word)!;
        score += Math.log(1 + (n - df + 0.5) / (df + 0.5)) * ((f * (K1 + 1)) / (f + norm));
      }
      if (score > 0) scores.push({ id, score });
    }
    return scores.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, limit);
  }
}
