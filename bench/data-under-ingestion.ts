// "API under ingestion": cheap calls (GET /ai/v2/models) at a steady rate, first with the
// server idle, then while real documents (test/fixtures/retrieval/corpus, the retrieval
// corpus) are uploaded and ingested at full speed, in the same run on the same server (the
// embedded default: PGlite on disk, the local embedding model). Target (issue 28): p99 under
// ingestion <= 2 x idle p99 + 5 ms; every upload answered in <= 1 s.
//
// The caller runs in the server's process (as the other data benches do), so its own work is
// in the figures on both sides. Run alone: `npx tsx bench/data-under-ingestion.ts`
// (BENCH_UNDER_INGESTION_DOCS, default 300; BENCH_UNDER_INGESTION_BATCH files per upload, default 10).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentPath, loadManifest } from '../scripts/retrieval/corpus.js';
import { start, uploadOverHttp, verdict } from './data-ingest.js';

const CALL_EVERY_MS = 20;
const IDLE_CALLS = 500;

export interface UnderIngestionResult {
  documents: number;
  MB: number;
  ingestSeconds: number;
  idle: { calls: number; p50: number; p99: number };
  busy: { calls: number; p50: number; p99: number };
  uploads: { count: number; p50: number; max: number };
  failed: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};
const summary = (values: number[]) => ({ calls: values.length, p50: percentile(values, 50), p99: percentile(values, 99) });

/** Calls GET /ai/v2/models every CALL_EVERY_MS until `done()` (or `count` calls); their latencies. */
async function cheapCalls(apiUrl: string, key: string, until: { count?: number; done?: () => boolean }): Promise<number[]> {
  const latencies: number[] = [];
  while (until.count === undefined ? !until.done!() : latencies.length < until.count) {
    const started = performance.now();
    const res = await fetch(`${apiUrl}/ai/v2/models`, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /ai/v2/models answered ${res.status}`);
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, CALL_EVERY_MS));
  }
  return latencies;
}

export async function benchApiUnderIngestion(documents = Number(process.env.BENCH_UNDER_INGESTION_DOCS ?? 300), batch = Number(process.env.BENCH_UNDER_INGESTION_BATCH ?? 10)): Promise<UnderIngestionResult> {
  const files = loadManifest()
    .slice(0, documents)
    .map((doc) => ({ name: doc.file, content: new Blob([readFileSync(documentPath(doc))]) }));
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-under-ingestion-'));
  const platform = await start({ dataDir });
  try {
    // Past first-use costs (route setup, the query embedder warming) before anything is timed.
    await cheapCalls(platform.apiUrl, platform.key, { count: 50 });
    const idle = await cheapCalls(platform.apiUrl, platform.key, { count: IDLE_CALLS });
    const { prisma } = platform.services.database;
    const ids: string[] = [];
    const uploads: number[] = [];
    let finished = false;
    const started = performance.now();
    const busyCalls = cheapCalls(platform.apiUrl, platform.key, { done: () => finished });
    for (let i = 0; i < files.length; i += batch) {
      const t = performance.now();
      ids.push(...(await uploadOverHttp(platform, files.slice(i, i + batch))));
      uploads.push(performance.now() - t);
    }
    for (;;) {
      const pending = await prisma.item.count({ where: { id: { in: ids }, status: { notIn: ['COMPLETED', 'FAILED'] } } });
      if (pending === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    finished = true;
    const busy = await busyCalls;
    const failed = await prisma.item.count({ where: { id: { in: ids }, status: 'FAILED' } });
    return {
      documents: ids.length,
      MB: files.reduce((sum, f) => sum + f.content.size, 0) / 1024 / 1024,
      ingestSeconds: (performance.now() - started) / 1000,
      idle: summary(idle),
      busy: summary(busy),
      uploads: { count: uploads.length, p50: percentile(uploads, 50), max: Math.max(...uploads) },
      failed,
    };
  } finally {
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export function formatApiUnderIngestion(r: UnderIngestionResult): string {
  const target = 2 * r.idle.p99 + 5;
  const ms = (x: number) => x.toFixed(1);
  return [
    `API under ingestion (GET /ai/v2/models every ${CALL_EVERY_MS} ms; ${r.documents} real documents, ${r.MB.toFixed(2)} MB, uploaded ${r.uploads.count} requests at full speed and ingested in ${r.ingestSeconds.toFixed(0)} s, ${r.failed} FAILED; PGlite on disk, local embedder, Node ${process.version})`,
    '| | calls | p50 ms | p99 ms |',
    '|---|---:|---:|---:|',
    `| idle | ${r.idle.calls} | ${ms(r.idle.p50)} | ${ms(r.idle.p99)} |`,
    `| under ingestion | ${r.busy.calls} | ${ms(r.busy.p50)} | ${ms(r.busy.p99)} |`,
    `Upload answers: p50 ${ms(r.uploads.p50)} ms, max ${ms(r.uploads.max)} ms  ${verdict(r.uploads.max <= 1_000, '<= 1000 ms')}`,
    `p99 under ingestion / target (2 x idle p99 + 5 ms = ${ms(target)} ms): ${(r.busy.p99 / target).toFixed(2)}  ${verdict(r.busy.p99 <= target, 'ratio <= 1')}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatApiUnderIngestion(await benchApiUnderIngestion()));
}
