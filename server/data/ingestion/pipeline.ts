// One ingestion job, start to end: read the file back, parse and chunk it in a parse worker
// thread (parse-pool.ts: never on the request thread, within the file's limits), embed the
// passages, and stage them in the chunk index a batch at a time; once all are staged the
// index makes them the item's content and the item searchable (COMPLETED) in one short
// transaction. Memory stays bounded by the limits: the file (at most UPLOAD_FILE_LIMIT), its
// passages (at most INGEST_MAX_PASSAGES) and one batch of vectors at a time. Each step
// renews the job's lease, and every write checks in its transaction that the job is still
// this worker's, so a worker that lost its job (taken over, or superseded by a newer
// upload) stops without writing anything.
import type { ChunkIndex, EmbeddingSpace } from '../search/chunk-index.js';
import type { ChunkOptions } from './chunker.js';
import { formatOfMediaType, UnreadableDocumentError } from './formats.js';
import { ItemGoneError, type ClaimedJob, type JobQueue } from './job-queue.js';
import type { ParsePool } from './parse-pool.js';
import { ItemStatus } from './statuses.js';

/** Turns passages into vectors of a space (the gateway in production; random vectors in a benchmark). */
export interface PassageEmbedder {
  embed(space: EmbeddingSpace, texts: string[], signal: AbortSignal): Promise<number[][]>;
  /** The longest input the space's model takes, in (estimated) tokens. */
  maxInputTokens(space: EmbeddingSpace): number;
}

export interface PipelineDeps {
  queue: JobQueue;
  chunkIndex: ChunkIndex;
  embedder: PassageEmbedder;
  parser: ParsePool;
}

/** Passages of about a paragraph or three: specific enough to cite, long enough to carry meaning. */
const TARGET_TOKENS = 200;
/** Never more than this, even for a model that takes more: long passages dilute their vectors. */
export const MAX_TOKENS = 400;
/** Passages per embedding call. */
const EMBED_BATCH = 32;
/**
 * Passages (with their vectors) held in memory and staged in one write. Small because on the
 * embedded PGlite a write runs on the event loop: every row updates the HNSW index (measured
 * ~7 ms a row at 512 dimensions, random vectors), so 64 rows hold the server for about half a
 * second where 256 held it for two.
 */
export const STAGE_BATCH = 64;

export function chunkOptions(maxInputTokens: number): ChunkOptions {
  const maxTokens = Math.max(16, Math.min(MAX_TOKENS, maxInputTokens));
  return { maxTokens, targetTokens: Math.min(TARGET_TOKENS, maxTokens) };
}

export interface JobOutcome {
  chunkCount: number;
}

export async function runJob(job: ClaimedJob, owner: string, deps: PipelineDeps, signal: AbortSignal): Promise<JobOutcome> {
  const { queue, chunkIndex, embedder } = deps;
  const step = async (status: ItemStatus, extra?: { title?: string | null }) => {
    signal.throwIfAborted();
    await queue.advance(job, owner, status, extra);
  };

  const indexed = await queue.indexedChunkCount(job);
  if (indexed !== null) {
    await queue.complete(job, owner);
    return { chunkCount: indexed };
  }

  await step(ItemStatus.FETCHING);
  const format = formatOfMediaType(job.mediaType);
  if (!format) throw new UnreadableDocumentError(`${job.fileName}: unsupported media type ${job.mediaType}`);
  const bytes = await queue.readFile(job);

  await step(ItemStatus.NORMALIZING);
  const space = await chunkIndex.embeddingSpace(job.publisherId);
  const document = await deps.parser.parse(bytes, format, job.fileName, chunkOptions(embedder.maxInputTokens(space)), signal);

  // The document's own title fills an item that has none (the upload's metadata wins).
  await step(ItemStatus.CHUNKING, { title: document.title });
  const guard = queue.writeGuard(job, owner);
  const { passages } = document;
  let staged = 0;
  while (staged < passages.length) {
    if (staged === 0) await step(ItemStatus.EMBEDDING);
    const batch = passages.slice(staged, staged + STAGE_BATCH);
    const vectors: number[][] = [];
    for (let start = 0; start < batch.length; start += EMBED_BATCH) {
      signal.throwIfAborted();
      vectors.push(...(await embedder.embed(space, batch.slice(start, start + EMBED_BATCH).map((p) => p.content), signal)));
    }
    signal.throwIfAborted();
    const chunks = batch.map((passage, i) => ({ ordinal: staged + i, content: passage.content, tokenCount: passage.tokenCount, terms: passage.terms, embedding: vectors[i]! }));
    if (!(await chunkIndex.stage(job.itemId, space, chunks, { first: staged === 0, guard }))) throw new ItemGoneError(`item ${job.itemId} was deleted`);
    staged += batch.length;
  }
  if (staged === 0) throw new UnreadableDocumentError(`${job.fileName} contains no text (a scanned PDF needs OCR first)`);

  signal.throwIfAborted();
  if (!(await chunkIndex.publish(job.itemId, staged, guard))) throw new ItemGoneError(`item ${job.itemId} was deleted`);
  await queue.complete(job, owner);
  return { chunkCount: staged };
}
