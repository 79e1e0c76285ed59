// Ingestion benchmark: throughput in MB/s of text, side by side.
//
//   embedder alone      the gateway's embedding calls on the passages of a corpus
//   end to end          the same corpus uploaded over HTTP until every item is COMPLETED
//                       (multipart, store, queue, parse, chunk, embed, index)
//   free embedder       two 50 MB Markdown files uploaded over HTTP (by curl, so the RSS
//                       sampled is the server's alone) and ingested by two workers with
//                       embedding replaced by random unit vectors made in process: what the
//                       platform itself costs, and its memory while it ingests 100 MB
//   upload              20 files of 50 MB over HTTP, stored before the answer: peak RSS
//
// Run alone: `npx tsx bench/data-ingest.ts` (BENCH_INGEST_E2E_KB, BENCH_INGEST_LARGE_MB (per
// file), BENCH_INGEST_UPLOAD_MB tune the sizes). bench/data.ts calls `benchIngestion`.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig, type Config } from '../server/config.js';
import { chunkText } from '../server/data/ingestion/chunker.js';
import { createIngestion, gatewayEmbedder } from '../server/data/ingestion/index.js';
import { chunkOptions, type PassageEmbedder } from '../server/data/ingestion/pipeline.js';
import { buildCatalog, defaultConfig } from '../server/gateway/catalog.js';
import { createLogger } from '../server/logging.js';
import { startPlatform, type RunningPlatform } from '../server/server.js';

export interface IngestionBenchOptions {
  /** Corpus of the embedder-alone and end-to-end runs (the local embedder is slow: keep it small). */
  e2eBytes: number;
  /** Free-embedder run: this many files of `largeFileBytes`. */
  largeFiles: number;
  largeFileBytes: number;
  /** Upload memory run: files × bytes each. */
  uploadFiles: number;
  uploadFileBytes: number;
}

export interface IngestionBenchResult {
  embedderMBps: number;
  endToEndMBps: number;
  /** end to end / embedder alone (target ≥ 0.8). */
  endToEndRatio: number;
  passages: number;
  freeMBps: number;
  freeMB: number;
  freePassages: number;
  /** The free-embedder run without the time spent in the chunk index's writes (pgvector inserts). */
  withoutIndexMBps: number;
  indexRowsPerSecond: number;
  freeRss: RssProfile;
  upload: { MB: number; seconds: number; rss: RssProfile };
}

export interface RssProfile {
  /** How many times RSS was read (every 50 ms while the event loop turns). */
  samples: number;
  beforeMB: number;
  peakMB: number;
  /** Peak RSS in the first and the last quarter of the run: equal when memory stays flat. */
  firstQuarterPeakMB: number;
  lastQuarterPeakMB: number;
}

const MB = 1024 * 1024;
const logger = createLogger('silent');

// ------------------------------------------------------------------ corpus

const WORDS = (
  'grace rest sabbath mercy justice hope lament prayer scripture covenant community hospitality forgiveness ' +
  'wisdom patience faith courage neighbour table bread water light path shepherd harvest season garden ' +
  'city stranger gift promise exile return song silence morning evening labour calling vocation practice ' +
  'memory story witness church household friendship generosity humility gratitude suffering comfort joy'
).split(' ');

/** Deterministic Markdown: chapters of sections of paragraphs, each file about `bytes` long. */
export function corpusFile(index: number, bytes: number): string {
  let seed = index * 2654435761 + 1;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed);
  const sentence = () => {
    const words = Array.from({ length: 8 + (next() % 12) }, () => WORDS[next() % WORDS.length]!);
    words[0] = words[0]!.charAt(0).toUpperCase() + words[0]!.slice(1);
    return `${words.join(' ')}.`;
  };
  const parts: string[] = [`# Document ${index}`];
  let size = parts[0]!.length;
  for (let s = 0; size < bytes; s++) {
    const block = s % 4 === 0 ? `## Section ${s}` : Array.from({ length: 3 + (next() % 4) }, sentence).join(' ');
    parts.push(block);
    size += block.length + 2;
  }
  return parts.join('\n\n');
}

function corpus(totalBytes: number, fileBytes: number): string[] {
  return Array.from({ length: Math.max(1, Math.round(totalBytes / fileBytes)) }, (_, i) => corpusFile(i, Math.min(fileBytes, totalBytes)));
}

// ------------------------------------------------------------------ helpers

class RssSampler {
  private readonly samples: number[] = [];
  private readonly timer: NodeJS.Timeout;
  readonly before = process.memoryUsage.rss();
  constructor() {
    this.timer = setInterval(() => this.samples.push(process.memoryUsage.rss()), 50);
  }
  stop(): RssProfile {
    clearInterval(this.timer);
    this.samples.push(process.memoryUsage.rss());
    const quarter = Math.max(1, Math.floor(this.samples.length / 4));
    const peak = (values: number[]) => Math.max(...values) / MB;
    return {
      samples: this.samples.length,
      beforeMB: this.before / MB,
      peakMB: peak(this.samples),
      firstQuarterPeakMB: peak(this.samples.slice(0, quarter)),
      lastQuarterPeakMB: peak(this.samples.slice(-quarter)),
    };
  }
}

function benchConfig(overrides: Partial<Config>): Config {
  return { ...loadConfig({}), port: 0, mgmtPort: 0, dataDir: 'memory://', bootstrapAdminKey: false, logLevel: 'silent', ...overrides };
}

export async function start(overrides: Partial<Config>): Promise<RunningPlatform & { key: string; publisherId: string }> {
  const platform = await startPlatform(benchConfig(overrides), logger, { catalog: buildCatalog(defaultConfig({}), 'bench', {}) });
  return { ...platform, key: platform.bootstrap!.adminKey!, publisherId: platform.bootstrap!.publisherId };
}

export async function uploadOverHttp(platform: { apiUrl: string; key: string; publisherId: string }, files: { name: string; content: Blob }[]): Promise<string[]> {
  // Small corpora only: fetch builds the whole form in memory.
  const form = new FormData();
  form.set('publisher_id', platform.publisherId);
  for (const file of files) form.append('files', file.content, file.name);
  const res = await fetch(`${platform.apiUrl}/ingestion/v2/files`, { method: 'POST', body: form, headers: { authorization: `Bearer ${platform.key}` } });
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { ingesting: string[] }).ingesting;
}

async function untilIndexed(platform: RunningPlatform, ids: string[]): Promise<void> {
  for (;;) {
    const pending = await platform.services.database.prisma.ingestionJob.count({ where: { itemId: { in: ids }, status: { in: ['QUEUED', 'RUNNING'] } } });
    if (pending === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const failed = await platform.services.database.prisma.item.count({ where: { id: { in: ids }, status: { not: 'COMPLETED' } } });
  if (failed > 0) throw new Error(`${failed} items did not complete`);
}

const seconds = (since: number) => (performance.now() - since) / 1000;

// ------------------------------------------------------------------ runs

/** Embedder alone, then the same corpus end to end, on one platform (the model warm for both). */
async function embedderVersusEndToEnd(bytes: number) {
  const platform = await start({ ingestionWorkers: 2 });
  try {
    const files = corpus(bytes, 16 * 1024);
    const textMB = files.reduce((sum, f) => sum + Buffer.byteLength(f), 0) / MB;
    const embedder = gatewayEmbedder(platform.services.inference.gateway);
    const space = await platform.services.chunkIndex.embeddingSpace(platform.publisherId);
    const options = chunkOptions(embedder.maxInputTokens(space));
    const passages = files.flatMap((f) => chunkText(f, options).map((c) => c.content));
    await embedder.embed(space, passages.slice(0, 8), AbortSignal.timeout(120_000)); // loads the model
    let started = performance.now();
    for (let i = 0; i < passages.length; i += 32) await embedder.embed(space, passages.slice(i, i + 32), AbortSignal.timeout(600_000));
    const embedderMBps = textMB / seconds(started);

    started = performance.now();
    const ids = await uploadOverHttp(platform, files.map((content, i) => ({ name: `doc-${i}.md`, content: new Blob([content]) })));
    await untilIndexed(platform, ids);
    const endToEndMBps = textMB / seconds(started);
    return { embedderMBps, endToEndMBps, endToEndRatio: endToEndMBps / embedderMBps, passages: passages.length };
  } finally {
    await platform.close();
  }
}

/** A random unit vector: every passage lands somewhere else in the space, as real ones do (HNSW's insert cost depends on it). */
function randomUnitVector(dimensions: number): number[] {
  const values = Array.from({ length: dimensions }, () => Math.random() - 0.5);
  const norm = Math.hypot(...values);
  return values.map((v) => v / norm);
}

/**
 * Large files end to end with embedding made free: uploaded over HTTP to the platform, whose
 * own workers are off, and ingested by two workers of this process on the same database (an
 * API instance and a worker instance, in one process so the RSS is all of it). PGlite on
 * disk, so the RSS is the process's, not the data's.
 */
async function freeEmbedder(files: number, fileBytes: number) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  const platform = await start({ dataDir: join(dir, 'pglite'), ingestionWorkers: 0, uploadFileLimit: fileBytes + MB, uploadTmpDir: join(dir, 'spool') });
  try {
    const { database, identity, chunkIndex: index } = platform.services;
    const free: PassageEmbedder = {
      embed: async (space, texts) => {
        // A real embedder is a call out (HTTP, a model's thread pool): the event loop turns.
        // Without this the workers' in-process database calls chain as microtasks and starve
        // timers and I/O (the RSS sampler, lease renewals, the upload's answer).
        await new Promise((resolve) => setImmediate(resolve));
        return texts.map(() => randomUnitVector(space.dimensions));
      },
      maxInputTokens: () => 2048,
    };
    // The index's share of the time, measured around each write (two workers: their writes
    // may overlap, so the share is an upper bound).
    let indexSeconds = 0;
    let indexRows = 0;
    const timed = async <T>(write: () => Promise<T>) => {
      const began = performance.now();
      try {
        return await write();
      } finally {
        indexSeconds += seconds(began);
      }
    };
    const chunkIndex: typeof index = {
      embeddingSpace: (publisherId) => index.embeddingSpace(publisherId),
      stage: (itemId, space, chunks, options) => {
        indexRows += chunks.length;
        return timed(() => index.stage(itemId, space, chunks, options));
      },
      publish: (itemId, count, guard) => timed(() => index.publish(itemId, count, guard)),
      replaceItemChunks: (itemId, space, chunks) => timed(() => index.replaceItemChunks(itemId, space, chunks)),
    };
    const config = { ...loadConfig({}), ingestionWorkers: 2, ingestionLeaseMs: 60_000, ingestionMaxAttempts: 3, ingestionRetryBaseMs: 1000 };
    const workers = createIngestion({ database, organizations: identity.organizations, chunkIndex, embedder: free, config, logger });
    const paths = Array.from({ length: files }, (_, i) => {
      const path = join(dir, `large-${i}.md`);
      writeFileSync(path, corpusFile(100_000 + i, fileBytes));
      return path;
    });
    const textMB = (files * fileBytes) / MB;
    const rss = new RssSampler();
    const started = performance.now();
    workers.worker.start();
    const ids = await curlUpload(platform, paths);
    await untilIndexed(platform, ids);
    const elapsed = seconds(started);
    const rssProfile = rss.stop();
    await workers.close();
    return {
      freeMBps: textMB / elapsed,
      freeMB: textMB,
      freePassages: indexRows,
      withoutIndexMBps: textMB / (elapsed - indexSeconds),
      indexRowsPerSecond: indexRows / indexSeconds,
      freeRss: rssProfile,
    };
  } finally {
    await platform.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One multipart request sent by curl (it streams the files: this process holds none of them). */
async function curlUpload(platform: { apiUrl: string; key: string; publisherId: string }, paths: string[]): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    'curl',
    [
      '-s', '-w', '\n%{http_code}',
      '-H', `authorization: Bearer ${platform.key}`,
      '-F', `publisher_id=${platform.publisherId}`,
      ...paths.flatMap((path) => ['-F', `files=@${path}`]),
      `${platform.apiUrl}/ingestion/v2/files`,
    ],
    { maxBuffer: 64 * MB },
  );
  const [body, status] = [stdout.slice(0, stdout.lastIndexOf('\n')), stdout.slice(stdout.lastIndexOf('\n') + 1)];
  if (status !== '200') throw new Error(`upload answered ${status}: ${body.slice(0, 500)}`);
  return (JSON.parse(body) as { ingesting: string[] }).ingesting;
}

/** Many large files in one request: stored before the answer, never held in memory. */
async function uploadMemory(files: number, fileBytes: number) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-upload-'));
  const platform = await start({ dataDir: join(dir, 'pglite'), ingestionWorkers: 0, uploadFileLimit: fileBytes, uploadMaxFiles: files, uploadTmpDir: join(dir, 'spool') });
  try {
    const line = 'Uploaded bytes stream to disk and into the database in parts, never whole in memory.\n';
    const paths = Array.from({ length: files }, (_, i) => {
      const path = join(dir, `upload-${i}.txt`);
      writeFileSync(path, `${i}\n${line.repeat(Math.floor((fileBytes - 10) / line.length))}`);
      return path;
    });
    const rss = new RssSampler();
    const started = performance.now();
    await curlUpload(platform, paths);
    return { MB: (files * fileBytes) / MB, seconds: seconds(started), rss: rss.stop() };
  } finally {
    await platform.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchIngestion(options: Partial<IngestionBenchOptions> = {}): Promise<IngestionBenchResult> {
  const o: IngestionBenchOptions = { e2eBytes: 256 * 1024, largeFiles: 2, largeFileBytes: 50 * MB, uploadFiles: 20, uploadFileBytes: 50 * MB, ...options };
  const versus = await embedderVersusEndToEnd(o.e2eBytes);
  const free = await freeEmbedder(o.largeFiles, o.largeFileBytes);
  const upload = await uploadMemory(o.uploadFiles, o.uploadFileBytes);
  return { ...versus, ...free, upload };
}

/** Memory is flat when the last quarter of a run peaks no higher than the first (10% slack for the allocator). */
const isFlat = (p: RssProfile) => p.lastQuarterPeakMB <= p.firstQuarterPeakMB * 1.1;

/** "ok" or a MISS that cannot be overlooked. */
export const verdict = (met: boolean, target: string) => (met ? `ok (${target})` : `<<< MISS: target ${target} >>>`);

export function formatIngestionBench(r: IngestionBenchResult): string {
  const f = (n: number, digits = 2) => n.toFixed(digits);
  const rss = (p: RssProfile) => `RSS before ${f(p.beforeMB, 0)} MB, peak ${f(p.peakMB, 0)} MB (first quarter ${f(p.firstQuarterPeakMB, 0)}, last quarter ${f(p.lastQuarterPeakMB, 0)}; ${p.samples} samples)`;
  return [
    'Ingestion (MB/s of text; PGlite; times include HTTP upload where said)',
    `  embedder alone            ${f(r.embedderMBps, 4)} MB/s  (${r.passages} passages, local-embedding, gateway calls only: no HTTP, parse or index)`,
    `  end to end                ${f(r.endToEndMBps, 4)} MB/s  = ${f(r.endToEndRatio)} of the embedder alone  ${verdict(r.endToEndRatio >= 0.8, '>= 0.8')}`,
    `                            (HTTP upload of 16 KB files, store, queue, parse, chunk, embed, index)`,
    `  free embedder             ${f(r.freeMBps)} MB/s  over ${f(r.freeMB, 0)} MB, ${r.freePassages} passages  ${verdict(r.freeMBps >= 5, '>= 5 MB/s')}`,
    `                            (HTTP upload of 2 large files, 2 workers, random unit vectors instead of a model)`,
    `    without the index writes ${f(r.withoutIndexMBps)} MB/s; index writes ${f(r.indexRowsPerSecond, 0)} passages/s (pgvector HNSW + full text)`,
    `                            ${rss(r.freeRss)}  memory flat: ${verdict(isFlat(r.freeRss), 'last quarter <= first + 10%')}`,
    `  upload ${f(r.upload.MB, 0)} MB in one request  ${f(r.upload.seconds, 1)} s (stored, not ingested); ${rss(r.upload.rss)}  memory flat: ${verdict(isFlat(r.upload.rss), 'last quarter <= first + 10%')}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const result = await benchIngestion({
    e2eBytes: env('BENCH_INGEST_E2E_KB', 256) * 1024,
    largeFileBytes: env('BENCH_INGEST_LARGE_MB', 50) * MB,
    uploadFileBytes: env('BENCH_INGEST_UPLOAD_MB', 50) * MB,
  });
  console.log(formatIngestionBench(result));
}
