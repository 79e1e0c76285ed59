// Ingestion benchmark: throughput in MB/s of text, side by side.
//
//   embedder alone      the gateway's embedding calls on the passages of a corpus
//   end to end          the same corpus uploaded over HTTP until every item is COMPLETED
//                       (multipart, store, queue, parse, chunk, embed, index)
//   constant embedder   the whole pipeline with embedding replaced by a constant vector, on a
//                       100 MB corpus (what the platform itself costs), with peak RSS sampled
//   upload              20 files of 50 MB over HTTP (sent by curl, so the RSS sampled is
//                       the server's alone), stored before the answer: peak RSS
//
// Run alone: `npx tsx bench/data-ingest.ts` (BENCH_INGEST_E2E_KB, BENCH_INGEST_CONSTANT_MB,
// BENCH_INGEST_UPLOAD_MB tune the sizes). bench/data.ts calls `benchIngestion`.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig, type Config } from '../server/config.js';
import { chunkText } from '../server/data/ingestion/chunker.js';
import { createIngestion, gatewayEmbedder } from '../server/data/ingestion/index.js';
import { chunkOptions, type PassageEmbedder } from '../server/data/ingestion/pipeline.js';
import { createSearchIndex } from '../server/data/search/index.js';
import { buildCatalog, defaultConfig } from '../server/gateway/catalog.js';
import { createLogger } from '../server/logging.js';
import { startPlatform, type RunningPlatform } from '../server/server.js';

export interface IngestionBenchOptions {
  /** Corpus of the embedder-alone and end-to-end runs (the local embedder is slow: keep it small). */
  e2eBytes: number;
  /** Corpus of the constant-embedder run. */
  constantBytes: number;
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
  constantMBps: number;
  constantMB: number;
  /** The constant run without the time spent in the chunk index's writes (pgvector inserts). */
  withoutIndexMBps: number;
  indexRowsPerSecond: number;
  constantRss: RssProfile;
  upload: { MB: number; seconds: number; rss: RssProfile };
}

export interface RssProfile {
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

async function start(overrides: Partial<Config>): Promise<RunningPlatform & { key: string; publisherId: string }> {
  const platform = await startPlatform(benchConfig(overrides), logger, { catalog: buildCatalog(defaultConfig({}), 'bench', {}) });
  return { ...platform, key: platform.bootstrap!.adminKey!, publisherId: platform.bootstrap!.publisherId };
}

async function uploadOverHttp(platform: { apiUrl: string; key: string; publisherId: string }, files: { name: string; content: Blob }[]): Promise<string[]> {
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

/** The pipeline with a constant vector for every passage, on an on-disk PGlite (RSS is the process's, not the data's). */
async function constantEmbedder(bytes: number) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  const platform = await start({ dataDir: join(dir, 'pglite'), ingestionWorkers: 0 });
  try {
    const { database, identity, inference } = platform.services;
    const search = createSearchIndex(database, inference.gateway, { collection: 'GlooProd', embeddingModel: 'local-embedding' });
    const constant: PassageEmbedder = {
      embed: async (space, texts) => texts.map(() => Array.from({ length: space.dimensions }, (_, i) => (i === 0 ? 1 : 0))),
      maxInputTokens: () => 2048,
    };
    // One job at a time, so the index writes never overlap the rest and their share is exact.
    const config = { ingestionWorkers: 1, ingestionLeaseMs: 60_000, ingestionMaxAttempts: 3, ingestionRetryBaseMs: 1000 };
    // The index's share of the time, measured around each write.
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
    const chunkIndex: typeof search.chunkIndex = {
      embeddingSpace: (publisherId) => search.chunkIndex.embeddingSpace(publisherId),
      stage: (itemId, space, chunks, options) => {
        indexRows += chunks.length;
        return timed(() => search.chunkIndex.stage(itemId, space, chunks, options));
      },
      publish: (itemId, count, guard) => timed(() => search.chunkIndex.publish(itemId, count, guard)),
      replaceItemChunks: (itemId, space, chunks) => timed(() => search.chunkIndex.replaceItemChunks(itemId, space, chunks)),
    };
    const ingestion = createIngestion({ database, organizations: identity.organizations, chunkIndex, embedder: constant, config, logger });
    const principal = { kind: 'api_key' as const, credentialId: 'bench', organizationId: (await database.prisma.publisher.findUniqueOrThrow({ where: { id: platform.publisherId } })).organizationId, scopes: [], expiresAt: null };
    // Files of 1 MB on disk, as the multipart step leaves them.
    const fileBytes = MB;
    const count = Math.max(1, Math.round(bytes / fileBytes));
    const spool = join(dir, 'spool');
    const files = Array.from({ length: count }, (_, i) => {
      const content = corpusFile(100_000 + i, fileBytes);
      const path = `${spool}-${i}.md`;
      writeFileSync(path, content);
      return { fieldName: 'files', originalName: `big-${i}.md`, mimeType: 'text/markdown', size: Buffer.byteLength(content), path, sha256: createHash('sha256').update(content).digest('hex') };
    });
    const textMB = files.reduce((sum, f) => sum + f.size, 0) / MB;
    const rss = new RssSampler();
    const started = performance.now();
    ingestion.worker.start();
    const ids: string[] = [];
    // Ten files per request, as a client uploading a library would.
    for (let i = 0; i < files.length; i += 10) ids.push(...(await ingestion.service.upload(principal, { publisherId: platform.publisherId, files: files.slice(i, i + 10) })).ingesting);
    await untilIndexed(platform, ids);
    const elapsed = seconds(started);
    await ingestion.worker.stop();
    return {
      constantMBps: textMB / elapsed,
      constantMB: textMB,
      withoutIndexMBps: textMB / (elapsed - indexSeconds),
      indexRowsPerSecond: indexRows / indexSeconds,
      constantRss: rss.stop(),
    };
  } finally {
    await platform.close();
    rmSync(dir, { recursive: true, force: true });
  }
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
    const { stdout } = await promisify(execFile)('curl', [
      '-s', '-o', '/dev/null', '-w', '%{http_code}',
      '-H', `authorization: Bearer ${platform.key}`,
      '-F', `publisher_id=${platform.publisherId}`,
      ...paths.flatMap((path) => ['-F', `files=@${path}`]),
      `${platform.apiUrl}/ingestion/v2/files`,
    ]);
    if (stdout !== '200') throw new Error(`upload answered ${stdout}`);
    return { MB: (files * fileBytes) / MB, seconds: seconds(started), rss: rss.stop() };
  } finally {
    await platform.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchIngestion(options: Partial<IngestionBenchOptions> = {}): Promise<IngestionBenchResult> {
  const o: IngestionBenchOptions = { e2eBytes: 256 * 1024, constantBytes: 100 * MB, uploadFiles: 20, uploadFileBytes: 50 * MB, ...options };
  const versus = await embedderVersusEndToEnd(o.e2eBytes);
  const constant = await constantEmbedder(o.constantBytes);
  const upload = await uploadMemory(o.uploadFiles, o.uploadFileBytes);
  return { ...versus, ...constant, upload };
}

export function formatIngestionBench(r: IngestionBenchResult): string {
  const f = (n: number, digits = 2) => n.toFixed(digits);
  const rss = (p: RssProfile) => `RSS before ${f(p.beforeMB, 0)} MB, peak ${f(p.peakMB, 0)} MB (first quarter ${f(p.firstQuarterPeakMB, 0)}, last quarter ${f(p.lastQuarterPeakMB, 0)})`;
  return [
    'Ingestion (MB/s of text)',
    `  embedder alone            ${f(r.embedderMBps, 4)} MB/s  (${r.passages} passages, local-embedding)`,
    `  end to end                ${f(r.endToEndMBps, 4)} MB/s  = ${f(r.endToEndRatio)} of the embedder alone (target >= 0.8)`,
    `  constant embedder         ${f(r.constantMBps)} MB/s  over ${f(r.constantMB, 0)} MB (target >= 5)`,
    `    without the index writes ${f(r.withoutIndexMBps)} MB/s; index writes ${f(r.indexRowsPerSecond, 0)} passages/s`,
    `                            ${rss(r.constantRss)}`,
    `  upload ${f(r.upload.MB, 0)} MB in one request  ${f(r.upload.seconds, 1)} s; ${rss(r.upload.rss)}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const result = await benchIngestion({
    e2eBytes: env('BENCH_INGEST_E2E_KB', 256) * 1024,
    constantBytes: env('BENCH_INGEST_CONSTANT_MB', 100) * MB,
    uploadFileBytes: env('BENCH_INGEST_UPLOAD_MB', 50) * MB,
  });
  console.log(formatIngestionBench(result));
}
