// The code of a sentence-encoder worker thread (run by local-embedder.ts through piscina;
// bundled on its own as dist/server/sentence-encoder-worker.js): embeds a batch of texts. The
// model loads on the thread's first task and stays for the thread's life.
import { move } from 'piscina';
import { SentenceEncoder } from './sentence-encoder.js';

export interface EmbedTask {
  texts: string[];
  /** Embed them this many times (default 1): warming, see WARM_RUNS. */
  runs?: number;
}

let encoder: Promise<SentenceEncoder> | undefined;

/** The texts' vectors, one after the other (`texts.length` × 512), moved to the caller without a copy. */
export default async function embed({ texts, runs = 1 }: EmbedTask): Promise<Float32Array> {
  // A failed load is tried again by the next task.
  encoder ??= SentenceEncoder.load().catch((error: unknown) => {
    encoder = undefined;
    throw error;
  });
  const loaded = await encoder;
  let vectors = await loaded.embed(texts);
  for (let run = 1; run < runs; run++) vectors = await loaded.embed(texts);
  return move(vectors) as Float32Array;
}
