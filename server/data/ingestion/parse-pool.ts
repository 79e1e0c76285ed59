// Parsing and chunking, seen from the request thread: a pool of worker threads (piscina,
// parse-worker.ts) at a lower CPU priority, each under a heap cap, each file under a
// wall-clock budget. A file that exhausts its thread's memory or its budget costs that thread
// (terminated, replaced on the next file), never the server.
//
// At most `threads` files are handed to the pool at once; the rest wait here. The budget runs
// from when a thread starts on the file (it says so), not while a thread starts up. Jobs themselves wait in the
// database (job-queue.ts): an instance holds no more than INGESTION_WORKERS of them.
import { Piscina } from 'piscina';
import type { Config } from '../../config.js';
import { workerScript } from '../../workers/worker-script.js';
import type { ChunkOptions } from './chunker.js';
import { UnreadableDocumentError, type DocumentFormat } from './formats.js';
import { limitReason } from './limits.js';
import type { ParsedPassage, ParseResult, ParseTask } from './parse-worker.js';

/**
 * The parse thread died: out of memory, over its budget, or crashed. Counted as an attempt and
 * retried (the next one may pass: less load, a fresh thread) until the job's attempts run out.
 */
export class ParserDiedError extends Error {
  override readonly name = 'ParserDiedError';
}

export interface ParsedFile {
  title: string | null;
  passages: ParsedPassage[];
}

/** Parse threads below the request thread's priority, as the embedder's passage threads are. */
const NICE = 10;
const IDLE_MS = 60_000;
/** How long a thread may take to start (load its code and parsers) on a busy machine. */
const THREAD_START_MS = 30_000;

export class ParsePool {
  private readonly pool: Piscina<ParseTask, ParseResult>;
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  /** Files handed to the pool, by task id: what to do when a thread starts on one. */
  private readonly onStart = new Map<number, () => void>();
  private lastId = 0;

  constructor(private readonly config: Pick<Config, 'ingestParseThreads' | 'ingestWorkerMemoryMb' | 'ingestJobBudgetMs' | 'ingestLimits'>) {
    this.pool = new Piscina({
      ...workerScript(new URL('./parse-worker.ts', import.meta.url), 'ingestion-parse-worker.js'),
      minThreads: 0,
      maxThreads: config.ingestParseThreads,
      idleTimeout: IDLE_MS,
      niceIncrement: NICE,
      resourceLimits: { maxOldGenerationSizeMb: config.ingestWorkerMemoryMb },
    });
    this.pool.on('message', (message: { parseStarted?: number }) => {
      if (typeof message?.parseStarted === 'number') this.onStart.get(message.parseStarted)?.();
    });
  }

  /** The file's title and passages; UnreadableDocumentError (limits included) or ParserDiedError. */
  async parse(bytes: Buffer, format: DocumentFormat, fileName: string, chunk: ChunkOptions, signal: AbortSignal): Promise<ParsedFile> {
    await this.slot(signal);
    try {
      return await this.run(bytes, format, fileName, chunk, signal);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async run(bytes: Buffer, format: DocumentFormat, fileName: string, chunk: ChunkOptions, signal: AbortSignal): Promise<ParsedFile> {
    const { ingestJobBudgetMs: budgetMs, ingestWorkerMemoryMb: memoryMb } = this.config;
    const id = ++this.lastId;
    const budget = new AbortController();
    // Until the thread says it started, a deadline for starting too: a thread that cannot start holds no job forever.
    let timer = setTimeout(() => budget.abort(), THREAD_START_MS + budgetMs);
    this.onStart.set(id, () => {
      clearTimeout(timer);
      timer = setTimeout(() => budget.abort(), budgetMs);
    });
    // The thread gets the bytes moved to it, not copied, when they hold a buffer of their own
    // (a large file, whose parts were joined); small ones may sit in Node's shared pool.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? new Uint8Array(bytes.buffer, 0, bytes.byteLength) : new Uint8Array(bytes);
    const task: ParseTask = { id, bytes: own, format, fileName, chunk, limits: this.config.ingestLimits };
    let result: ParseResult;
    try {
      result = await this.pool.run(task, { signal: AbortSignal.any([signal, budget.signal]), transferList: [own.buffer as ArrayBuffer] });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (budget.signal.aborted) throw new ParserDiedError(limitReason('parse time', `${budgetMs} ms`, 'INGEST_JOB_BUDGET_MS'));
      if ((error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        throw new ParserDiedError(limitReason('parser memory', `${memoryMb} MB`, 'INGEST_WORKER_MEMORY_MB'));
      }
      throw new ParserDiedError(`the parse thread failed on ${fileName}: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
      this.onStart.delete(id);
    }
    if ('unreadable' in result) throw new UnreadableDocumentError(result.unreadable);
    return result;
  }

  /** Waits for one of the pool's threads to be free (or `signal`). */
  private async slot(signal: AbortSignal): Promise<void> {
    while (this.running >= this.config.ingestParseThreads) {
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve();
        };
        this.waiting.push(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    signal.throwIfAborted();
    this.running++;
  }

  /** Threads running and files waiting for one (for monitoring and tests). */
  stats(): { threads: number; parsing: number; waiting: number } {
    return { threads: this.pool.threads.length, parsing: this.running, waiting: this.waiting.length };
  }

  /** Stops the threads; files being parsed fail. */
  close(): Promise<void> {
    return this.pool.destroy();
  }
}
