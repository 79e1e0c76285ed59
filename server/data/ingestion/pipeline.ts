// One ingestion job, start to end: read the file back, parse it, chunk it, embed the
// passages in batches, and hand them to the chunk index, which stores them and makes the
// item searchable (COMPLETED) in one transaction. Each step first renews the job's lease,
// so a worker that lost its job stops before writing anything.
import type { ChunkIndex, EmbeddingSpace, IndexedChunk } from '../search/chunk-index.js';
import { chunkText, type ChunkOptions } from './chunker.js';
import { formatOfMediaType, UnreadableDocumentError } from './formats.js';
import { LeaseLostError, type ClaimedJob, type JobQueue } from './job-queue.js';
import { parseDocument } from './parse.js';
import { ItemStatus } from './statuses.js';

/** Turns passages into vectors of a space (the gateway in production; a constant in a benchmark). */
export interface PassageEmbedder {
  embed(space: EmbeddingSpace, texts: string[], signal: AbortSignal): Promise<number[][]>;
  /** The longest input the space's model takes, in (estimated) tokens. */
  maxInputTokens(space: EmbeddingSpace): number;
}

export interface PipelineDeps {
  queue: JobQueue;
  chunkIndex: ChunkIndex;
  embedder: PassageEmbedder;
}

/** Passages of about a paragraph or three: specific enough to cite, long enough to carry meaning. */
const TARGET_TOKENS = 200;
/** Never more than this, even for a model that takes more: long passages dilute their vectors. */
export const MAX_TOKENS = 400;
/** Passages per embedding call. */
const EMBED_BATCH = 32;

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
  const bytes = await queue.readFile(job);
  const format = formatOfMediaType(job.mediaType);
  if (!format) throw new UnreadableDocumentError(`${job.fileName}: unsupported media type ${job.mediaType}`);

  await step(ItemStatus.NORMALIZING);
  const document = await parseDocument(bytes, format, job.fileName);

  // The document's own title fills an item that has none (the upload's metadata wins).
  await step(ItemStatus.CHUNKING, { title: document.title });
  const space = await chunkIndex.embeddingSpace(job.publisherId);
  const passages = chunkText(document.text, chunkOptions(embedder.maxInputTokens(space)));
  if (passages.length === 0) throw new UnreadableDocumentError(`${job.fileName} contains no text (a scanned PDF needs OCR first)`);

  await step(ItemStatus.EMBEDDING);
  const chunks: IndexedChunk[] = [];
  for (let start = 0; start < passages.length; start += EMBED_BATCH) {
    signal.throwIfAborted();
    const batch = passages.slice(start, start + EMBED_BATCH);
    const vectors = await embedder.embed(space, batch.map((p) => p.content), signal);
    batch.forEach((passage, i) => chunks.push({ ordinal: start + i, content: passage.content, tokenCount: passage.tokenCount, embedding: vectors[i]! }));
  }

  signal.throwIfAborted();
  if (!(await queue.renew(job, owner))) throw new LeaseLostError(`job ${job.id} was taken over before its passages were stored`);
  await chunkIndex.replaceItemChunks(job.itemId, space, chunks);
  await queue.complete(job, owner);
  return { chunkCount: chunks.length };
}
