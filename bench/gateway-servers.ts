// The processes of bench/gateway.ts: each server (the fake upstream, the two bare
// forwarders, the platform) runs in a child process of its own, so that its CPU time
// (/proc/<pid>/stat) and peak RSS are its own and not the load generator's, and so that it
// can be pinned to a core apart from the load generator and raised above the machine's other work.
//
// Child side: `serve(role)` starts one server and reports `{ url, key? }` over IPC; it then
// answers 'db-stats' (database transactions so far), 'profile-start' / 'profile-stop' (V8
// CPU profile of what happened in between), 'alloc-start' / 'alloc-stop' (V8's sampling heap
// profile of what was allocated in between, garbage included; 'alloc-old-start' leaves out what
// the young generation's scavenges collected), 'memory' (process.memoryUsage()), 'first-frames'
// (the fake upstream: when it wrote each marked stream's first frame) and 'exit'.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setPriority, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Session } from 'node:inspector';
import { SourceMap, type SourceMapping } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pipeline } from 'node:stream/promises';
import { buildSync, type BuildOptions } from 'esbuild';
import express from 'express';
import bundleOptions from '../scripts/bundle-options.json' with { type: 'json' };
import { startScriptSettings } from './start-script.js';
import { Pool } from 'undici';

export const CHAT_PATH = '/v1/chat/completions';
export type Role = 'upstream' | 'node-forwarder' | 'express-forwarder' | 'gateway';

interface Ready {
  url: string;
  key?: string;
}

async function serve(role: Role): Promise<void> {
  const upstream = process.env.BENCH_UPSTREAM!;
  // Same transport settings as the gateway's providers (server/providers/http-client.ts).
  const pool = () => new Pool(upstream, { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
  let ready: Ready;
  let close = async () => {};
  let databaseTransactions = async (): Promise<number | null> => null;
  let firstFrames = (): Record<string, number> => ({});

  if (role === 'upstream') {
    const { startFakeOpenAI } = await import('../mocks/upstreams/fake-openai.js');
    const chunkIntervalMs = Number(process.env.BENCH_CHUNK_MS ?? 0);
    // Slow streams: BENCH_CHUNKS words as as many content chunks; otherwise a short sentence.
    const words = Number(process.env.BENCH_CHUNKS ?? 40);
    const answer = chunkIntervalMs ? Array.from({ length: words }, (_, i) => `word${i}`).join(' ') : 'The quick brown fox jumps over the lazy dog.';
    const fake = await startFakeOpenAI({ answer, chunkIntervalMs });
    // The fake records every request; a long run must not keep them all, only the first
    // frames' times of the streams that carry a first-byte marker (withFirstFrameMarker).
    let marked: Record<string, number> = {};
    const harvest = () => {
      for (const recorded of fake.requests) {
        const marker = firstFrameMarker(recorded.body);
        if (marker && recorded.firstFrameAt !== undefined) marked[marker] = Number(recorded.firstFrameAt);
      }
      fake.requests.length = 0;
    };
    setInterval(harvest, 1_000).unref();
    firstFrames = () => {
      harvest();
      const times = marked;
      marked = {};
      return times;
    };
    ready = { url: fake.url };
  } else if (role === 'node-forwarder') {
    const upstreamPool = pool();
    const server = http.createServer((req, res) => {
      (async () => {
        const body = Buffer.concat(await req.toArray());
        const answer = await upstreamPool.request({ method: 'POST', path: CHAT_PATH, headers: { 'content-type': 'application/json' }, body });
        res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type']) });
        await pipeline(answer.body, res);
      })().catch(() => res.destroy());
    });
    ready = { url: await listen(server) };
  } else if (role === 'express-forwarder') {
    // What a minimal Express proxy does: parse the JSON body, send it on, pipe the answer back.
    const upstreamPool = pool();
    const app = express();
    app.use(express.json());
    app.post(CHAT_PATH, async (req, res) => {
      const answer = await upstreamPool.request({ method: 'POST', path: CHAT_PATH, headers: { 'content-type': 'application/json' }, body: JSON.stringify(req.body) });
      res.status(answer.statusCode).type(String(answer.headers['content-type']));
      await pipeline(answer.body, res).catch(() => res.destroy());
    });
    ready = { url: await listen(http.createServer(app)) };
  } else {
    const { buildCatalog, defaultConfig } = await import('../server/gateway/catalog.js');
    const { startTestPlatform } = await import('../test/support/platform.js');
    // The built-in catalog of a machine without keys (the platform needs its local embedding
    // model), plus the fake upstream as the one chat model routing picks.
    const builtIn = defaultConfig({}) as { providers: unknown[]; deployments: unknown[]; models: unknown[]; routing: object };
    const catalog = buildCatalog(
      {
        providers: [...builtIn.providers, { id: 'fake', type: 'openai', base_url: `${upstream}/v1` }],
        // The default cap of 256 in-flight calls per deployment would refuse the streams mode.
        deployments: [...builtIn.deployments, { id: 'd-fake', provider: 'fake', model: 'fake-model', max_concurrent: 100_000 }],
        models: [
          ...builtIn.models,
          { id: 'bench-model', family: 'openai', context_window: 100_000, max_output_tokens: 4_000, deployments: ['d-fake'] },
          // The response cache's case: every request after the first is a hit.
          { id: 'bench-cached', family: 'openai', context_window: 100_000, max_output_tokens: 4_000, deployments: ['d-fake'], cache: { ttl_ms: 3_600_000 } },
        ],
        routing: { ...builtIn.routing, tiers: { tier_1: ['bench-model'], tier_2: ['bench-model'], tier_3: ['bench-model'] } },
      },
      'bench',
      {},
    );
    // Production settings: no response validation, no logs; PGlite in a data directory on disk
    // as `npm start` runs it (in memory the whole database would count in the RSS), or
    // (--postgres) PostgreSQL and Redis as at scale.
    const databaseUrl = process.env.BENCH_DATABASE_URL;
    const dataDir = databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'bench-gateway-'));
    const store = { databaseUrl, redisUrl: process.env.BENCH_REDIS_URL, ...(dataDir && { dataDir }) };
    const platform = await startTestPlatform({ logLevel: 'silent', validateResponses: false, ...store }, { catalog });
    ready = { url: platform.apiUrl, key: platform.adminKey };
    close = async () => {
      await platform.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    };
    // Every statement outside an explicit transaction is one; the query itself counts one too.
    databaseTransactions = async () => {
      const [row] = await platform.services.database.prisma.$queryRawUnsafe<{ n: number }[]>(
        'SELECT (xact_commit + xact_rollback)::int AS n FROM pg_stat_database WHERE datname = current_database()',
      );
      return row.n;
    };
  }
  // The V8 profiler through the inspector rather than --cpu-prof, so that the profile
  // covers the load only, not start-up (module loading, PGlite's WebAssembly).
  const profiler = new Session();
  profiler.connect();
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) => profiler.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  process.on('message', async (message: 'exit' | 'first-frames' | 'db-stats' | 'memory' | 'profile-start' | 'profile-stop' | 'alloc-start' | 'alloc-old-start' | 'alloc-stop') => {
    if (message === 'memory') {
      process.send!(process.memoryUsage());
    } else if (message === 'first-frames') {
      process.send!(firstFrames());
    } else if (message === 'db-stats') {
      process.send!({ transactions: await databaseTransactions() });
    } else if (message === 'profile-start') {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 200 });
      await post('Profiler.start');
      process.send!('profiling');
    } else if (message === 'profile-stop') {
      const { profile } = await post('Profiler.stop');
      process.send!(withSources(profile, profile.nodes));
    } else if (message === 'alloc-start' || message === 'alloc-old-start') {
      // Objects that die young are what a request's garbage is: keep their samples, unless
      // what is asked is what reached the old generation (what grows the heap between full GCs).
      const young = message === 'alloc-start';
      await post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: young });
      process.send!('profiling');
    } else if (message === 'alloc-stop') {
      const { profile } = await post('HeapProfiler.stopSampling');
      const nodes: Frame[] = [];
      const visit = (node: AllocationFrame): void => {
        nodes.push(node);
        node.children.forEach(visit);
      };
      visit(profile.head);
      process.send!(withSources(profile, nodes));
    } else {
      await close();
      process.exit(0);
    }
  });
  // A parent that dies (an error, Ctrl-C) takes its servers with it.
  process.on('disconnect', () => process.exit(1));
  process.send!(ready);
}

/**
 * A stream's first-byte marker: ` #<marker>` ending its last message. The fake upstream keeps
 * when it wrote the first frame of each marked stream ('first-frames' asks for them, in
 * `process.hrtime.bigint()` ns), so that a client can time the gateway's first byte from the
 * upstream's own, whichever path the request took.
 */
export const withFirstFrameMarker = (text: string, marker: string) => `${text} #${marker}`;

function firstFrameMarker(body: { messages?: { content?: unknown }[] } | undefined): string | undefined {
  const content = body?.messages?.at(-1)?.content;
  return typeof content === 'string' ? /#(\w+)$/.exec(content)?.[1] : undefined;
}

interface Frame {
  callFrame: { url: string; lineNumber: number; columnNumber: number };
}
interface AllocationFrame extends Frame {
  children: AllocationFrame[];
}

/**
 * A profile of the bundle (serversBundle) with its frames moved to the source lines they
 * came from, so that it reads as the files a change touches (server/http/entry.ts).
 */
function withSources<T>(profile: T, nodes: Frame[]): T {
  const bundle = fileURLToPath(import.meta.url);
  const map = new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, 'utf8')));
  for (const { callFrame } of nodes) {
    if (callFrame.url !== import.meta.url) continue;
    const entry = map.findEntry(callFrame.lineNumber, callFrame.columnNumber) as Partial<SourceMapping>;
    if (!entry.originalSource) continue;
    callFrame.url = pathToFileURL(resolve(dirname(bundle), entry.originalSource)).href;
    callFrame.lineNumber = entry.originalLine!;
    callFrame.columnNumber = entry.originalColumn!;
  }
  return profile;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// ---------------------------------------------------------------------------------------
// Parent side.

export interface Child extends Ready {
  role: Role;
  process: ChildProcess;
}

/**
 * Starts a role; the gateway runs with the Node flags and environment of `npm start`.
 * `checkout`: another checkout of the repository (a baseline) whose servers to run instead.
 */
export function start(role: Role, env: Record<string, string> = {}, checkout?: string): Promise<Child> {
  const settings = role === 'gateway' ? startScriptSettings() : { flags: [], env: {} };
  const child = fork(serversBundle(checkout ?? ROOT), {
    ...(checkout && { cwd: checkout }),
    env: { ...process.env, ...settings.env, BENCH_ROLE: role, ...env },
    execArgv: settings.flags,
  });
  return new Promise((resolve, reject) => {
    child.once('message', (ready: Ready) => resolve({ role, process: child, ...ready }));
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code} before listening`)));
  });
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const bundles = new Map<string, string>();

/**
 * This file and what it imports as one bundle of plain JavaScript per checkout, built as
 * scripts/build-server.mjs builds what `npm start` runs: the measured processes run no
 * TypeScript loader (tsx names every function it makes with a wrapper call, ~2% of the
 * gateway's CPU, which the shipped bundle does not pay).
 */
function serversBundle(checkout: string): string {
  let file = bundles.get(checkout);
  if (!file) {
    file = join(checkout, 'dist', 'bench', 'gateway-servers.mjs');
    buildSync({
      absWorkingDir: checkout,
      entryPoints: ['bench/gateway-servers.ts'],
      outfile: file,
      ...(bundleOptions as BuildOptions),
    });
    bundles.set(checkout, file);
  }
  return file;
}

export async function stop(child: Child): Promise<void> {
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.send('exit');
  await exited;
}

/** Sends a message to a child and resolves with its next reply. */
export function ask<T>(child: Child, message: string): Promise<T> {
  const reply = new Promise<T>((resolve) => child.process.once('message', resolve));
  child.process.send(message);
  return reply;
}

/** Database transactions the gateway has run so far (null for the other roles). */
export async function databaseTransactions(child: Child): Promise<number | null> {
  return (await ask<{ transactions: number | null }>(child, 'db-stats')).transactions;
}

/** Pins every thread of a process to the given CPUs (taskset -a: the main thread, libuv's pool, V8's GC helpers). */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

export const NICE = -10;

/** Every thread of a process at nice NICE (a thread's priority is its own on Linux: /proc/<pid>/task lists them). */
export function raisePriority(pid: number): void {
  for (const thread of readdirSync(`/proc/${pid}/task`)) setPriority(Number(thread), NICE);
}

/** CPU time (user + system) of a process so far, in µs, from /proc (clock ticks of 10 ms). */
export function cpuMicros(pid: number): number {
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** A /proc/<pid>/status size (VmHWM: peak RSS, VmRSS: current), in MiB. */
export function memoryMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const kb = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1];
  return Number(kb) / 1024;
}

if (process.env.BENCH_ROLE) {
  serve(process.env.BENCH_ROLE as Role).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
