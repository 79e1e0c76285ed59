// The real local embedding model, seen from the request thread: Universal Sentence Encoder
// lite (sentence-encoder/) runs in worker threads (piscina), never on the thread that answers
// requests. Two lanes:
//   passages  `threads` threads at a lower CPU priority; a call is cut into batches of 8
//             texts that run in parallel.
//   queries   short inputs (a search query, a sentence: at most 512 characters in all) on a
//             thread of its own at normal priority, so that a query never waits behind a
//             batch of passages (~0.5 s). Without it (`queryThread: false`, one model fewer in
//             memory) they go ahead of queued passages but wait for a running batch.
// A thread loads the model on its first task (~1 s, ~125-155 MB) and keeps it: an idle server
// holds none until first use or warm(); passage threads stop after a minute idle.
import { Piscina, queueOptionsSymbol, type TaskQueue } from 'piscina';
import type { Config } from '../../config.js';
import { workerScript } from '../../workers/worker-script.js';
import { checkDimensions, normalize, type Embedder } from './embedder.js';
import { DIMENSIONS } from './sentence-encoder/sentence-encoder.js';
import type { EmbedTask } from './sentence-encoder/worker.js';

export interface LocalEmbedderOptions {
  /** Threads embedding passages (LOCAL_EMBEDDER_THREADS). */
  threads: number;
  /** A thread of its own for short inputs (LOCAL_EMBEDDER_QUERY_THREAD). */
  queryThread: boolean;
}

/** Texts per task: ~0.5 s of a thread for passages; larger batches are no faster (bench/embedder.ts). */
const BATCH_TEXTS = 8;
/** Inputs of at most this many characters in all are short: the model reads ~128 tokens of a text. */
const SHORT_CHARS = 512;
const IDLE_MS = 60_000;
/**
 * Runs of a query that warming makes: V8 compiles the model's JavaScript and WebAssembly fully
 * only after a few dozen (measured: a short query costs ~220 ms of CPU first, 30-50 ms for the
 * next dozen, ~16 ms from about the 15th on).
 */
const WARM_RUNS = 24;
/** Passages yield the CPU to the request thread and to queries (nice 10 weighs ~1/10 of nice 0 on Linux). */
const NICE = 10;

type Task = EmbedTask & { [queueOptionsSymbol]?: { short: boolean } };
/** A task as piscina queues it. */
type Queued = Parameters<TaskQueue['push']>[0];

export class SentenceEncoderEmbedder implements Embedder {
  readonly model = 'universal-sentence-encoder-lite';
  readonly nativeDimensions = DIMENSIONS;
  private readonly passages: Piscina<Task, Float32Array>;
  private readonly queries: Piscina<Task, Float32Array> | null;
  private closing: Promise<void> | undefined;

  constructor(options: LocalEmbedderOptions) {
    const script = workerScript(new URL('./sentence-encoder/worker.ts', import.meta.url), 'sentence-encoder-worker.js');
    this.passages = new Piscina({
      ...script,
      minThreads: 0,
      maxThreads: options.threads,
      idleTimeout: IDLE_MS,
      niceIncrement: NICE,
      taskQueue: new ShortFirstQueue(),
      // A task taken from the queue while every thread is busy goes back to its head, not its tail.
      stricterFIFO: true,
    });
    this.queries = options.queryThread ? new Piscina({ ...script, minThreads: 0, maxThreads: 1, idleTimeout: Infinity }) : null;
  }

  async embed(texts: string[], dimensions?: number): Promise<number[][]> {
    const size = checkDimensions(this, dimensions);
    if (this.closing) throw new Error('the local embedding model is stopped: the server is shutting down');
    if (texts.length === 0) return [];
    const short = texts.reduce((chars, text) => chars + text.length, 0) <= SHORT_CHARS;
    const pool = short && this.queries ? this.queries : this.passages;
    const batches = short ? [texts] : Array.from({ length: Math.ceil(texts.length / BATCH_TEXTS) }, (_, i) => texts.slice(i * BATCH_TEXTS, (i + 1) * BATCH_TEXTS));
    const results = await Promise.all(batches.map((batch) => pool.run({ texts: batch, [queueOptionsSymbol]: { short } })));
    return results.flatMap((vectors, b) =>
      batches[b].map((_, i) => normalize(Array.from(vectors.subarray(i * DIMENSIONS, i * DIMENSIONS + size)))),
    );
  }

  /** Loads and exercises the model in the thread that embeds queries, so that the first ones do not wait for it. */
  async warm(): Promise<void> {
    try {
      await (this.queries ?? this.passages).run({ texts: ['how do I warm up the model?'], runs: WARM_RUNS, [queueOptionsSymbol]: { short: true } });
    } catch (error) {
      // Closed meanwhile: nothing to warm any more.
      if (!this.closing) throw error;
    }
  }

  /** Threads running in each lane, and tasks waiting (for monitoring). */
  lanes(): { lane: 'passages' | 'queries'; threads: number; queued: number }[] {
    const lane = (name: 'passages' | 'queries', pool: Piscina | null) => (pool ? [{ lane: name, threads: pool.threads.length, queued: pool.queueSize }] : []);
    return [...lane('passages', this.passages), ...lane('queries', this.queries)];
  }

  /** Stops the threads; calls still running or queued fail, and so do later ones. */
  close(): Promise<void> {
    this.closing ??= Promise.all([this.passages.destroy(), this.queries?.destroy()]).then(() => undefined);
    return this.closing;
  }
}

/** Passage batches in order, with short inputs ahead of them all. */
class ShortFirstQueue implements TaskQueue {
  private readonly short: Queued[] = [];
  private readonly long: Queued[] = [];

  get size(): number {
    return this.short.length + this.long.length;
  }

  push(task: Queued): void {
    this.laneOf(task).push(task);
  }

  unshift(task: Queued): void {
    this.laneOf(task).unshift(task);
  }

  shift(): Queued | null {
    return this.short.shift() ?? this.long.shift() ?? null;
  }

  private laneOf(task: Queued): Queued[] {
    return (task[queueOptionsSymbol] as Task[typeof queueOptionsSymbol] | null)?.short ? this.short : this.long;
  }

  remove(task: Queued): void {
    for (const list of [this.short, this.long]) {
      const i = list.indexOf(task);
      if (i >= 0) list.splice(i, 1);
    }
  }
}

/** The embedder the server shares between its local providers. */
export function createLocalEmbedder(config: Pick<Config, 'localEmbedderThreads' | 'localEmbedderQueryThread'>): SentenceEncoderEmbedder {
  return new SentenceEncoderEmbedder({ threads: config.localEmbedderThreads, queryThread: config.localEmbedderQueryThread });
}
