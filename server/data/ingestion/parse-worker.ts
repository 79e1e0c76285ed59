// The code of a parse worker thread (run by parse-pool.ts through piscina; bundled on its own
// as dist/server/ingestion-parse-worker.js): one file to its title and passages, each with its
// keyword statistics, so that none of that CPU work runs on the request thread. A file the
// platform cannot read (or past a content limit) is an answer, not a failure of the thread.
import { parentPort } from 'node:worker_threads';
import { termFrequencies, type TermStatistics } from '../search/analyzer.js';
import type { ChunkOptions, TextChunk } from './chunker.js';
import { UnreadableDocumentError, type DocumentFormat } from './formats.js';
import type { ContentLimits } from './limits.js';
import { documentPassages, loadParsers } from './parse.js';

export interface ParseTask {
  /** Told back (`{ parseStarted: id }`) when the thread starts on it: the file's budget runs from then. */
  id: number;
  bytes: Uint8Array;
  format: DocumentFormat;
  fileName: string;
  chunk: ChunkOptions;
  limits: ContentLimits;
}

export interface ParsedPassage extends TextChunk {
  terms: TermStatistics;
}

export type ParseResult = { title: string | null; passages: ParsedPassage[] } | { unreadable: string };

// The parsers start loading with the thread, and the file's budget starts once they are in:
// loading them is no file's cost.
void loadParsers().catch(() => undefined);

export default async function parse(task: ParseTask): Promise<ParseResult> {
  await loadParsers();
  parentPort?.postMessage({ parseStarted: task.id });
  try {
    const { title, passages } = await documentPassages(task.bytes, task.format, task.fileName, task.chunk, task.limits);
    return { title, passages: passages.map((passage) => ({ ...passage, terms: termFrequencies(passage.content) })) };
  } catch (error) {
    if (error instanceof UnreadableDocumentError) return { unreadable: error.message };
    throw error;
  }
}
