// Overhead of the inference gateway over bare forwarders, side by side in one run on this
// machine, against a fake OpenAI-compatible upstream on loopback (mocks/upstreams/fake-openai.ts).
//
//   npm run bench:gateway                               throughput, latency, CPU, stream first byte; a response
//                            cache hit is a case of its own (a model with `cache`, temperature 0)
//   npm run bench:gateway -- --duration 5 --rounds 5    seconds per case and rounds (default 3 and 3)
//   npm run bench:gateway -- --baseline REF             also the gateway as of git REF (a temporary worktree), in
//                            the same rounds: a change's A/B in one run, which a noisy machine needs (with
//                            --postgres each gateway bootstraps a database of its own; they share Redis)
//   npm run bench:gateway -- --streams 5000             many slow concurrent streams: peak RSS, chunk delay
//                            [--chunk-ms 50 --chunks 600 --ramp 200]  (a chunk every 50 ms, 600 per stream: 30 s
//                            each, opened at 200 a second so that all are open at once when the last one starts)
//   npm run bench:gateway -- --first-byte 1000          only streams' first bytes, 1,000 per path [--profile: the gateway's CPU meanwhile]
//   npm run bench:gateway -- --profile                  the gateway at 64 connections under the V8 profiler
//   npm run bench:gateway -- --streams 300 --profile    the gateway's stream pass under the profiler
//   npm run bench:gateway -- --streams 300 --alloc      what the stream pass allocated that reached the old generation
//   npm run bench:gateway -- --profile --profile-out F  also writes the raw profile to F (.cpuprofile: Chrome DevTools opens it)
//   npm run bench:gateway -- --profile --profile-case express   profiles the bare Express forwarder instead (to compare)
//   npm run bench:gateway -- --alloc [--profile-case express]  bytes allocated per request (garbage included) by
//                            allocation site, from V8's sampling heap profiler (what the GC time is spent on)
//   npm run bench:gateway -- --alloc-old                only what outlived the young generation (promoted: what
//                            makes scavenges slow and major GCs come)
//   npm run bench:gateway -- --postgres                 the gateway on PostgreSQL and Redis, as at scale (a fresh
//                            database on TEST_POSTGRES_URL's server, dropped after; REDIS_URL or redis://127.0.0.1:6379)
//   npm run bench:gateway -- --pin                      the server under test on a core of its own
//   npm run bench:gateway -- --no-priority              leave every process at the default nice level
//
// Isolation: every server (the fake, the two forwarders, the platform) runs in its own child
// process (bench/gateway-servers.ts), so its CPU time and RSS come from /proc and are its own;
// this process only generates load (autocannon, undici) and prints. Run as root, all of them
// run at nice -10, ahead of whatever else a shared machine is doing (other people's builds
// and tests). --pin puts the server under test on the last core and everything else on the
// others; on a busy 2-core machine that was worse than letting the scheduler place them,
// so it is off by default. Each round runs every case; figures are the median over rounds
// (req/s also shows min–max). Ratios and targets are printed, never asserted.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { summarize, summarizeAllocations, type AllocationProfile, type CpuProfile } from './gateway-profile.js';
import { ask, CHAT_PATH, withFirstFrameMarker, cpuMicros, databaseTransactions, memoryMiB, NICE, pin, raisePriority, start, stop, type Child, type Role } from './gateway-servers.js';
import { createTestDatabase, type TestDatabase } from '../test/support/postgres-server.js';

const GATEWAY_PATH = '/ai/v2/guarded/chat/completions';
const MESSAGES = [{ role: 'user', content: 'Tell me about the fox.' }];
const JSON_HEADERS = { 'content-type': 'application/json' };

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    streams: { type: 'string' },
    'first-byte': { type: 'string' },
    'chunk-ms': { type: 'string', default: '50' },
    chunks: { type: 'string', default: '600' },
    ramp: { type: 'string', default: '200' },
    profile: { type: 'boolean', default: false },
    alloc: { type: 'boolean', default: false },
    'alloc-old': { type: 'boolean', default: false },
    baseline: { type: 'string' },
    'profile-out': { type: 'string' },
    'profile-case': { type: 'string', default: 'gateway' },
    pin: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    'no-priority': { type: 'boolean', default: false },
  },
});

const CORES = cpus().length;
const PINNED = args.pin && CORES >= 2;
const SERVER_CPU = String(CORES - 1);
const LOAD_CPUS = CORES > 2 ? `0-${CORES - 2}` : '0';
// Ahead of whatever else the machine runs (a shared machine: other people's builds and tests).
const PRIORITY = !args['no-priority'] && process.getuid?.() === 0;

/** What a server needs to reach the fake upstream and, with --postgres, the database and Redis. */
const serverEnv = (upstream: Child, db = database) => ({ BENCH_UPSTREAM: upstream.url, ...(db && { BENCH_DATABASE_URL: db.url, BENCH_REDIS_URL: REDIS_URL }) });

async function startAll(roles: Role[], stream = { chunkMs: 0, chunks: 0 }): Promise<Map<Role, Child>> {
  const children = new Map<Role, Child>();
  const up = await start('upstream', { BENCH_CHUNK_MS: String(stream.chunkMs), BENCH_CHUNKS: String(stream.chunks) });
  children.set('upstream', up);
  for (const child of await Promise.all(roles.map((role) => start(role, serverEnv(up))))) children.set(child.role, child);
  if (PINNED) {
    pin(process.pid, LOAD_CPUS);
    pin(up.process.pid!, LOAD_CPUS);
    for (const role of roles) pin(children.get(role)!.process.pid!, SERVER_CPU);
  }
  if (PRIORITY) for (const pid of [process.pid, ...[...children.values()].map((c) => c.process.pid!)]) raisePriority(pid);
  return children;
}

function setting(what: string): string {
  const priority = PRIORITY ? `, all of them at nice ${NICE}` : '';
  const isolation = PINNED
    ? `each server in its own process pinned to CPU ${SERVER_CPU}; the load generator (this process) and the fake upstream on CPU ${LOAD_CPUS}`
    : 'each server in its own process, not pinned';
  const store = database ? 'database: PostgreSQL (another process), with Redis' : 'database: PGlite on disk (a temporary data directory)';
  return `${what}; Node ${process.version}, ${CORES} cores, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}; ${isolation}${priority}; ${store}.`;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

const median = (list: number[]) => percentile([...list].sort((a, b) => a - b), 50);
const f = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const verdict = (ok: boolean) => (ok ? 'MEETS' : 'MISSES');

interface Target {
  name: string;
  child: Child;
  options: autocannon.Options;
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  cpuPerRequest: number;
  /** Database transactions per request (the gateway only). */
  transactions: number;
}

async function measure(target: Target, connections: number, duration: number): Promise<Measured> {
  // autocannon's histogram has 1 ms resolution; each response's own duration is exact.
  const latencies: number[] = [];
  const pid = target.child.process.pid!;
  const transactions = await databaseTransactions(target.child);
  const cpu = cpuMicros(pid);
  const run = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections, duration, ...target.options }, (error, result) => (error ? reject(error) : resolve(result)));
    // autocannon emits (client, status, bytes, ms); @types/autocannon leaves out the client.
    (instance as NodeJS.EventEmitter).on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms));
  });
  const used = cpuMicros(pid) - cpu;
  const answered = run.requests.total;
  // The stats query counts one transaction itself.
  const transactionsAfter = await databaseTransactions(target.child);
  if (run.non2xx > 0 || run.errors > 0 || answered === 0) {
    throw new Error(`${target.name}: ${answered} answered, ${run.non2xx} non-2xx, ${run.errors} errors (${run.timeouts} timeouts)`);
  }
  latencies.sort((a, b) => a - b);
  return {
    rps: answered / duration,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    cpuPerRequest: used / answered,
    transactions: transactions === null ? NaN : (transactionsAfter! - transactions - 1) / answered,
  };
}

/** JIT, connection pools, the credential cache: a fixed number of requests, however slow the machine is. */
async function warm(target: Target): Promise<void> {
  await autocannon({ connections: 64, amount: 2_000, ...target.options });
}

/**
 * A streamed request's first `data:` line: ms from sending, and when it arrived
 * (`process.hrtime.bigint()` ns, the clock the fake upstream stamps its first frame with).
 */
async function firstByte(pool: Pool, path: string, headers: Record<string, string>, body: string): Promise<{ ms: number; at: bigint }> {
  const started = process.hrtime.bigint();
  const res = await pool.request({ method: 'POST', path, headers, body });
  let seen = '';
  let at: bigint | undefined;
  for await (const chunk of res.body) {
    if (at === undefined) {
      seen += chunk.toString();
      if (seen.includes('data:')) at = process.hrtime.bigint();
    }
  }
  if (res.statusCode !== 200 || at === undefined) throw new Error(`${path}: status ${res.statusCode}, no data line`);
  return { ms: Number(at - started) / 1e6, at };
}

const CASES = {
  upstream: 'upstream alone (the fake)',
  node: 'bare node:http forwarder',
  express: 'bare Express forwarder',
  gateway: 'gateway, full pipeline',
  idempotent: 'gateway + Idempotency-Key',
  cacheHit: 'gateway, response cache hit',
} as const;

/** The server each case measures, besides the fake upstream every case runs. */
const ROLE_OF_CASE: Record<Exclude<keyof typeof CASES, 'upstream'>, Role> = {
  node: 'node-forwarder',
  express: 'express-forwarder',
  gateway: 'gateway',
  idempotent: 'gateway',
  cacheHit: 'gateway',
};

/** The cases whose servers are running (the gateway's two whenever it runs). */
function targets(children: Map<Role, Child>): Target[] {
  const upstreamBody = JSON.stringify({ model: 'fake-model', messages: MESSAGES });
  const direct = (name: string, role: Role): Target[] => {
    const child = children.get(role);
    return child ? [{ name, child, options: { url: child.url + CHAT_PATH, method: 'POST', headers: JSON_HEADERS, body: upstreamBody } }] : [];
  };
  const bare = [...direct(CASES.upstream, 'upstream'), ...direct(CASES.node, 'node-forwarder'), ...direct(CASES.express, 'express-forwarder')];
  const gateway = children.get('gateway');
  if (!gateway) return bare;
  const optionsOf = (child: Child) => ({
    url: child.url + GATEWAY_PATH,
    method: 'POST' as const,
    headers: { ...JSON_HEADERS, authorization: `Bearer ${child.key}` },
    body: JSON.stringify({ model: 'bench-model', messages: MESSAGES }),
  });
  const gatewayOptions = optionsOf(gateway);
  return [
    ...bare,
    ...(baseline ? [{ name: baselineName(), child: baseline, options: optionsOf(baseline) }] : []),
    { name: CASES.gateway, child: gateway, options: gatewayOptions },
    {
      name: CASES.idempotent,
      child: gateway,
      options: {
        ...gatewayOptions,
        // A fresh key per request, as the SDK sends: every request claims and stores a record.
        requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }],
      },
    },
    // A model with the response cache and a deterministic request: answered without the upstream.
    { name: CASES.cacheHit, child: gateway, options: { ...gatewayOptions, body: JSON.stringify({ model: 'bench-cached', temperature: 0, messages: MESSAGES }) } },
  ];
}

/** The gateway of the --baseline checkout, when asked for: a case of its own. */
let baseline: Child | undefined;
const baselineName = () => `gateway at ${args.baseline}`;

/** A worktree of git `ref` sharing this checkout's node_modules; removed when `use` ends. */
async function withCheckout<T>(ref: string, use: (dir: string) => Promise<T>): Promise<T> {
  const dir = join(mkdtempSync(join(tmpdir(), 'bench-baseline-')), 'checkout');
  execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { stdio: 'ignore' });
  try {
    symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
    return await use(dir);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { stdio: 'ignore' });
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
}

async function throughput(duration: number, rounds: number): Promise<void> {
  const children = await startAll(['node-forwarder', 'express-forwarder', 'gateway']);
  const gateway = children.get('gateway')!;
  if (args.baseline) {
    baseline = await start('gateway', serverEnv(children.get('upstream')!, baselineDatabase), baselineCheckout);
    if (PRIORITY) raisePriority(baseline.process.pid!);
  }
  const idleRss = memoryMiB(gateway.process.pid!, 'VmRSS');
  const list = targets(children);
  for (const target of list) await warm(target);

  // Round after round of every case, so that a slow spell of the machine hits every case alike.
  const samples = new Map<string, { 1: Measured[]; 64: Measured[] }>(list.map((t) => [t.name, { 1: [], 64: [] }]));
  for (let round = 1; round <= rounds; round++) {
    for (const connections of [1, 64] as const) {
      for (const target of list) samples.get(target.name)![connections].push(await measure(target, connections, duration));
    }
    process.stderr.write(`round ${round}/${rounds} done\n`);
  }

  const firstBytes = await streamFirstBytes(children, 100 * rounds);
  const peakRss = memoryMiB(gateway.process.pid!, 'VmHWM');
  await Promise.all([...children.values(), ...(baseline ? [baseline] : [])].map(stop));

  // Medians over rounds.
  const m = (name: string, c: 1 | 64, key: keyof Measured) => median(samples.get(name)![c].map((s) => s[key]));
  const spread = (name: string) => {
    const rps = samples.get(name)![64].map((s) => s.rps);
    return `${Math.round(Math.min(...rps))}–${Math.round(Math.max(...rps))}`;
  };
  console.log(`\n${setting(`${rounds} rounds of ${duration} s per case`)}\n`);
  console.log('Throughput at 64 connections (closed loop: each connection sends its next request when answered):\n');
  console.log('| case | req/s (median) | req/s min–max | ratio to node:http | ratio to Express | CPU µs/req | Express CPU ÷ case CPU | DB transactions/req |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const t of list) {
    const rps = m(t.name, 64, 'rps');
    const cpu = m(t.name, 64, 'cpuPerRequest');
    console.log(
      `| ${t.name} | ${Math.round(rps)} | ${spread(t.name)} | ${f(rps / m(CASES.node, 64, 'rps'))} | ${f(rps / m(CASES.express, 64, 'rps'))} | ` +
        `${Math.round(cpu)} | ${f(m(CASES.express, 64, 'cpuPerRequest') / cpu)} | ${f(m(t.name, 64, 'transactions'), 1)} |`,
    );
  }
  console.log('\nCPU µs/req: the server process\'s own CPU (user + system, /proc) over the requests it answered; "Express CPU ÷ case CPU" is the');
  console.log('throughput ratio a server would reach with a core of its own and nothing else limiting it.\n');

  console.log('Latency, ms (median over rounds of each round\'s percentile); "added" = the case minus the bare Express forwarder (same number of hops),');
  console.log('"over upstream" = the case minus the fake alone (includes the extra hop):\n');
  console.log('| case | p50 @1 | p99 @1 | added p50 / p99 @1 | over upstream p50 / p99 @1 | p50 @64 | p99 @64 | added p50 / p99 @64 | over upstream p50 / p99 @64 |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  const added = (name: string, base: string, c: 1 | 64) => `${f(m(name, c, 'p50') - m(base, c, 'p50'))} / ${f(m(name, c, 'p99') - m(base, c, 'p99'))}`;
  for (const t of list) {
    console.log(
      `| ${t.name} | ${f(m(t.name, 1, 'p50'))} | ${f(m(t.name, 1, 'p99'))} | ${added(t.name, CASES.express, 1)} | ${added(t.name, CASES.upstream, 1)} | ` +
        `${f(m(t.name, 64, 'p50'))} | ${f(m(t.name, 64, 'p99'))} | ${added(t.name, CASES.express, 64)} | ${added(t.name, CASES.upstream, 64)} |`,
    );
  }

  const printed = printFirstBytes(firstBytes);
  const { sorted, gatewayIndex } = printed;

  const rps = (name: string) => m(name, 64, 'rps');
  const idempotencyCost = 1 - rps(CASES.idempotent) / rps(CASES.gateway);
  const hitCpu = m(CASES.cacheHit, 64, 'cpuPerRequest');
  const addedAt64 = (p: 'p50' | 'p99') => m(CASES.gateway, 64, p) - m(CASES.express, 64, p);
  if (baseline) {
    const b = baselineName();
    console.log(
      `\nAgainst ${b} (same rounds): req/s ${f(rps(CASES.gateway) / rps(b))}x, CPU per request ${f(m(CASES.gateway, 64, 'cpuPerRequest') / m(b, 64, 'cpuPerRequest'))}x, ` +
        `p50 @64 ${f(m(CASES.gateway, 64, 'p50') - m(b, 64, 'p50'))} ms, stream first byte p50 ${f(percentile(sorted[gatewayIndex], 50) - percentile(sorted[gatewayIndex - 1], 50))} ms.`,
    );
  }
  console.log(`\nGateway RSS: ${Math.round(idleRss)} MiB idle after start, ${Math.round(peakRss)} MiB peak.\n\nTargets (issue 8):`);
  console.log(`  ${verdict(rps(CASES.gateway) >= 0.85 * rps(CASES.express))}  gateway req/s >= 0.85 x bare Express forwarder: ${f(rps(CASES.gateway) / rps(CASES.express))}`);
  console.log(`  ${verdict(addedAt64('p50') <= 0.5)}  added p50 <= 0.5 ms @64 (over the Express forwarder): ${f(addedAt64('p50'))} ms`);
  console.log(`  ${verdict(addedAt64('p99') <= 2)}  added p99 <= 2 ms @64 (over the Express forwarder): ${f(addedAt64('p99'))} ms`);
  console.log(firstByteVerdicts(printed));
  console.log(`  ${verdict(idempotencyCost <= 0.1)}  Idempotency-Key costs <= 10% of req/s: ${f(idempotencyCost * 100, 1)}%`);
  console.log(
    `\nA response cache hit: ${Math.round(rps(CASES.cacheHit))} req/s (${f(rps(CASES.cacheHit) / rps(CASES.gateway))}x the gateway without the cache), ` +
      `${Math.round(hitCpu)} CPU µs/req (${f(hitCpu / m(CASES.gateway, 64, 'cpuPerRequest'))}x), p50 @1 ${f(m(CASES.cacheHit, 1, 'p50'))} ms against ${f(m(CASES.gateway, 1, 'p50'))} ms.`,
  );
}

interface FirstBytes {
  paths: { name: string }[];
  /** Per path, ms from sending to the first `data:` line, sorted. */
  sorted: number[][];
  /** Per path, ms from the fake upstream writing its first frame to the client reading the first `data:` line, sorted. */
  relayed: number[][];
  warmUp: number;
  counted: number;
}

/**
 * The first byte of a stream through each path: the same request, sent one at a time and
 * round-robin so that drift hits every path alike. Only the forwarders that are running
 * take part. Each request carries a marker by which the fake upstream tells when it wrote
 * that stream's first frame.
 */
async function streamFirstBytes(children: Map<Role, Child>, counted: number, warmUp = 50): Promise<FirstBytes> {
  const streamBody = (model: string, marker: string) =>
    JSON.stringify({ model, messages: [{ role: 'user', content: withFirstFrameMarker(MESSAGES[0].content, marker) }], stream: true });
  const gatewayPath = (name: string, child: Child) => ({
    name,
    url: child.url,
    path: GATEWAY_PATH,
    headers: { ...JSON_HEADERS, authorization: `Bearer ${child.key}` },
    model: 'bench-model',
  });
  const direct = (name: string, role: Role) => {
    const child = children.get(role);
    return child ? [{ name, url: child.url, path: CHAT_PATH, headers: JSON_HEADERS, model: 'fake-model' }] : [];
  };
  const paths = [
    ...direct('upstream alone', 'upstream'),
    ...direct(CASES.node, 'node-forwarder'),
    ...direct(CASES.express, 'express-forwarder'),
    ...(baseline ? [gatewayPath(baselineName(), baseline)] : []),
    gatewayPath('gateway', children.get('gateway')!),
  ].map((p) => ({ ...p, pool: new Pool(p.url) }));
  const ttfb = paths.map(() => [] as number[]);
  const arrivals = paths.map(() => new Map<string, bigint>());
  for (let i = 0; i < warmUp + counted; i++) {
    for (const [j, p] of paths.entries()) {
      const marker = `s${i}p${j}`;
      const { ms, at } = await firstByte(p.pool, p.path, p.headers, streamBody(p.model, marker));
      if (i < warmUp) continue;
      ttfb[j].push(ms);
      arrivals[j].set(marker, at);
    }
  }
  await Promise.all(paths.map((p) => p.pool.close()));
  const firstFrames = await ask<Record<string, number>>(children.get('upstream')!, 'first-frames');
  const relayed = arrivals.map((byMarker) =>
    [...byMarker].flatMap(([marker, at]) => (marker in firstFrames ? [Number(at - BigInt(firstFrames[marker])) / 1e6] : [])),
  );
  const sort = (lists: number[][]) => lists.map((list) => list.sort((a, b) => a - b));
  return { paths, sorted: sort(ttfb), relayed: sort(relayed), warmUp, counted };
}

/** Prints the first bytes' table; the gateway is the last path, the fake alone the first. */
function printFirstBytes({ paths, sorted, relayed, warmUp, counted }: FirstBytes) {
  const gatewayIndex = paths.length - 1;
  const overUpstream = (j: number, p: number) => percentile(sorted[j], p) - percentile(sorted[0], p);
  const relay = (j: number, p: number) => percentile(relayed[j], p);
  console.log(`\nStream first byte (first "data:" line), ${counted} sequential streams per path after ${warmUp} of warm-up, ms:\n`);
  console.log('| path | p50 | p99 | minus upstream alone\'s, p50 | p99 | after the upstream wrote its first frame, p50 | p99 |\n|---|---:|---:|---:|---:|---:|---:|');
  for (const [j, p] of paths.entries()) {
    console.log(
      `| ${p.name} | ${f(percentile(sorted[j], 50))} | ${f(percentile(sorted[j], 99))} | ${f(overUpstream(j, 50))} | ${f(overUpstream(j, 99))} | ` +
        `${f(relay(j, 50))} | ${f(relay(j, 99))} |`,
    );
  }
  console.log(
    '\n"Minus upstream alone\'s": the whole request through the path (reading, validating and routing it, the extra hop) against the fake\n' +
      'asked directly. "After the upstream wrote its first frame": from the fake writing the stream\'s first frame to the client reading\n' +
      'the first `data:` line (one clock, process.hrtime, in every process): what a path adds to the first byte once the upstream has it.',
  );
  return { sorted, overUpstream, relay, gatewayIndex };
}

/** Judged on both readings of "first byte ≤ 1 ms after upstream's" (printFirstBytes). */
function firstByteVerdicts({ overUpstream, relay, gatewayIndex }: ReturnType<typeof printFirstBytes>): string {
  const line = (value: number, p99: number, what: string) => `  ${verdict(value <= 1)}  stream first byte <= 1 ms ${what} (p50): ${f(value)} ms (p99 ${f(p99)} ms)`;
  return [
    line(relay(gatewayIndex, 50), relay(gatewayIndex, 99), 'after the upstream wrote its first frame'),
    line(overUpstream(gatewayIndex, 50), overUpstream(gatewayIndex, 99), "after upstream alone's (whole request, extra hop included)"),
  ].join('\n');
}

/**
 * --first-byte N: only the streams' first bytes (N per path), with --profile the gateway
 * under the V8 profiler meanwhile ("per request" = per stream, whole stream included).
 */
async function firstBytesOnly(counted: number): Promise<void> {
  const children = await startAll(['node-forwarder', 'express-forwarder', 'gateway']);
  const gateway = children.get('gateway')!;
  if (args.profile) await ask(gateway, 'profile-start');
  const result = await streamFirstBytes(children, counted);
  const cpuProfile = args.profile ? await ask<CpuProfile>(gateway, 'profile-stop') : null;
  await Promise.all([...children.values()].map(stop));
  console.log(`\n${setting('Streams one at a time')}`);
  console.log(`\nTarget (issue 8):\n${firstByteVerdicts(printFirstBytes(result))}`);
  if (cpuProfile && args['profile-out']) writeFileSync(args['profile-out'], JSON.stringify(cpuProfile));
  if (cpuProfile) console.log(`\nThe gateway under the V8 profiler (warm-up included):\n\n${summarize(cpuProfile, result.warmUp + result.counted)}`);
}

/**
 * Holds `count` concurrent streams. Returns the gaps between content chunks (ms), the peak
 * of streams flowing at once (first text received, not finished), each stream's time to
 * its first text, and why streams failed.
 */
async function holdStreams(url: string, path: string, headers: Record<string, string>, body: string, count: number, perSecond: number) {
  // One connection per stream: a smaller pool would queue them.
  const pool = new Pool(url, { connections: count, headersTimeout: 0, bodyTimeout: 0 });
  const gaps: number[] = [];
  const firstText: number[] = [];
  const failures = new Map<string, number>();
  let flowing = 0;
  let peak = 0;
  let failed = 0;
  const one = async () => {
    const started = performance.now();
    let last = NaN;
    try {
      const res = await pool.request({ method: 'POST', path, headers, body });
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${(await res.body.text()).slice(0, 120)}`);
      // One socket read per text frame (the fake writes each alone, 50 ms apart): searched
      // as bytes, not parsed, so that this client keeps up with 100,000 frames a second.
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        const now = performance.now();
        if (chunk.includes(ERROR_END)) throw new Error('stream ended with finish_reason "error"');
        if (!hasText(chunk)) continue;
        if (Number.isNaN(last)) {
          firstText.push(now - started);
          peak = Math.max(peak, ++flowing);
        } else gaps.push(now - last);
        last = now;
      }
    } catch (error) {
      failed++;
      const reason = (error as Error).message;
      failures.set(reason, (failures.get(reason) ?? 0) + 1);
    } finally {
      if (!Number.isNaN(last)) flowing--;
    }
  };
  // Opened `perSecond` a second in batches every 50 ms: faster, connections overflow the
  // servers' listen backlog (511) and wait for SYN retries of 1, 3, 7… s.
  const all: Promise<void>[] = [];
  const batch = Math.max(1, Math.round(perSecond / 20));
  for (let i = 0; i < count; i += batch) {
    for (let j = i; j < Math.min(count, i + batch); j++) all.push(one());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await Promise.all(all);
  await pool.close();
  return { gaps: gaps.sort((a, b) => a - b), firstText: firstText.sort((a, b) => a - b), peak, failed, failures };
}

const TEXT = Buffer.from('"content":"');
const ERROR_END = Buffer.from('"finish_reason":"error"');

/** Whether a read holds a frame with non-empty text (`"content":""` opens a stream). */
function hasText(chunk: Buffer): boolean {
  for (let at = chunk.indexOf(TEXT); at >= 0; at = chunk.indexOf(TEXT, at + 1)) {
    if (chunk[at + TEXT.length] !== 0x22) return true;
  }
  return false;
}

async function streams(count: number, chunkMs: number, chunks: number, perSecond: number): Promise<void> {
  const children = await startAll(['gateway'], { chunkMs, chunks });
  const up = children.get('upstream')!;
  const gateway = children.get('gateway')!;
  const body = (model: string) => JSON.stringify({ model, messages: MESSAGES, stream: true });
  const gatewayHeaders = { ...JSON_HEADERS, authorization: `Bearer ${gateway.key}` };
  // Warm-up, then the fake alone (what the fake and this client add by themselves), then the gateway.
  await holdStreams(gateway.url, GATEWAY_PATH, gatewayHeaders, body('bench-model'), 100, perSecond);
  const idleRss = memoryMiB(gateway.process.pid!, 'VmRSS');
  const direct = await holdStreams(up.url, CHAT_PATH, JSON_HEADERS, body('fake-model'), count, perSecond);
  const cpu = cpuMicros(gateway.process.pid!);
  if (args.profile) await ask(gateway, 'profile-start');
  if (args.alloc) await ask(gateway, 'alloc-old-start');
  // Where the memory is when it is highest: V8's heap, or outside it (buffers, sockets, WebAssembly, malloc).
  // Samples run one after another and are awaited before the next question: a reply is taken by whichever question waits.
  let fullest: NodeJS.MemoryUsage | undefined;
  let sampling = Promise.resolve();
  const sampler = setInterval(() => {
    sampling = sampling.then(async () => {
      const usage = await ask<NodeJS.MemoryUsage>(gateway, 'memory');
      if (!fullest || usage.rss > fullest.rss) fullest = usage;
    });
  }, 1_000);
  const through = await holdStreams(gateway.url, GATEWAY_PATH, gatewayHeaders, body('bench-model'), count, perSecond).finally(() => clearInterval(sampler));
  await sampling;
  const cpuSeconds = (cpuMicros(gateway.process.pid!) - cpu) / 1e6;
  const cpuProfile = args.profile ? await ask<CpuProfile>(gateway, 'profile-stop') : null;
  const oldAllocations = args.alloc ? await ask<AllocationProfile>(gateway, 'alloc-stop') : null;
  const peakRss = memoryMiB(gateway.process.pid!, 'VmHWM');
  await Promise.all([...children.values(), ...(baseline ? [baseline] : [])].map(stop));
  if (cpuProfile && args['profile-out']) writeFileSync(args['profile-out'], JSON.stringify(cpuProfile));

  const added = (gaps: number[], p: number) => percentile(gaps, p) - chunkMs;
  const overDirect = (p: number) => percentile(through.gaps, p) - percentile(direct.gaps, p);
  console.log(`\n${setting(`${count} concurrent streams opened ${perSecond} a second, a text chunk every ${chunkMs} ms (${chunks} per stream)`)}\n`);
  console.log('| path | peak streams flowing at once | failed | first text p50 / p99 ms | gaps measured | gap minus interval p50 ms | p99 ms | max ms |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const [name, r] of [['fake upstream alone', direct], ['through the gateway', through]] as const) {
    console.log(
      `| ${name} | ${r.peak} | ${r.failed} | ${f(percentile(r.firstText, 50), 0)} / ${f(percentile(r.firstText, 99), 0)} | ${r.gaps.length} | ` +
        `${f(added(r.gaps, 50))} | ${f(added(r.gaps, 99))} | ${f(added(r.gaps, 100))} |`,
    );
  }
  console.log(`| gateway minus fake alone | | | | | ${f(overDirect(50))} | ${f(overDirect(99))} | ${f(overDirect(100))} |`);
  for (const [name, r] of [['fake alone', direct], ['gateway', through]] as const) {
    for (const [reason, n] of r.failures) console.log(`  failed (${name}), ${n}x: ${reason}`);
  }
  console.log(`\nGateway: RSS ${Math.round(idleRss)} MiB before, peak ${Math.round(peakRss)} MiB; CPU ${f(cpuSeconds, 1)} s during the gateway pass`);
  if (fullest) {
    const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
    console.log(`At the fullest sample (one a second): RSS ${mib(fullest.rss)} MiB, V8 heap ${mib(fullest.heapUsed)} used of ${mib(fullest.heapTotal)}, external ${mib(fullest.external)} (array buffers ${mib(fullest.arrayBuffers)})`);
  }
  console.log(`(${f((cpuSeconds * 1e6) / Math.max(1, through.gaps.length + count), 0)} µs per relayed chunk).`);
  console.log('Gap: client-observed time between text chunks of one stream, minus the interval; the first row is what the fake and this client add alone.\n\nTargets (issue 8):');
  console.log(`  ${verdict(peakRss < 1024 && through.failed === 0)}  gateway peak RSS < 1 GB with every stream served: ${Math.round(peakRss)} MiB, ${through.failed} failed`);
  console.log(`  ${verdict(overDirect(99) <= 5)}  added inter-chunk delay p99 <= 5 ms (gateway minus fake alone): ${f(overDirect(99))} ms`);
  if (cpuProfile) console.log(`\nThe gateway pass under the V8 profiler ("per request" = per stream of ${chunks} chunks):\n\n${summarize(cpuProfile, count)}`);
  if (oldAllocations) {
    console.log(`\nWhat the gateway pass allocated that outlived the young generation (V8's sampling heap profiler; "per request" = per stream):\n\n${summarizeAllocations(oldAllocations, count)}`);
  }
}

/**
 * A case (the gateway by default) at 64 connections under the V8 profiler: self time (or,
 * with --alloc, bytes allocated) by component, file and function.
 */
async function profile(duration: number): Promise<void> {
  const which = args['profile-case'] as keyof typeof CASES;
  if (!(which in CASES)) throw new Error(`--profile-case: one of ${Object.keys(CASES).join(', ')}`);
  const alloc = args.alloc || args['alloc-old'];
  const children = await startAll(which === 'upstream' ? [] : [ROLE_OF_CASE[which]]);
  const target = targets(children).find((t) => t.name === CASES[which])!;
  await warm(target);
  await ask(target.child, args['alloc-old'] ? 'alloc-old-start' : alloc ? 'alloc-start' : 'profile-start');
  const run = await measure(target, 64, duration);
  const result = await ask<CpuProfile | AllocationProfile>(target.child, alloc ? 'alloc-stop' : 'profile-stop');
  await Promise.all([...children.values()].map(stop));
  if (args['profile-out']) writeFileSync(args['profile-out'], JSON.stringify(result));

  const profiler = alloc
    ? `V8's sampling heap profiler (a sample every 4 KiB on average${args['alloc-old'] ? ', only what outlived the young generation' : ''})`
    : 'the V8 profiler (sampling every 200 µs)';
  console.log(`\n${setting(`${CASES[which]}, 64 connections for ${duration} s under ${profiler}`)}`);
  console.log(`${Math.round(run.rps)} req/s, ${Math.round(run.cpuPerRequest)} CPU µs/req (process, profiler included), ${f(run.transactions, 1)} database transactions/req.\n`);
  const requests = Math.round(run.rps * duration);
  console.log(alloc ? summarizeAllocations(result as AllocationProfile, requests) : summarize(result as CpuProfile, requests));
}

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
let database: TestDatabase | undefined;
/** With --postgres, the --baseline gateway's own database: each gateway bootstraps its own. */
let baselineDatabase: TestDatabase | undefined;

async function main(): Promise<void> {
  const duration = Number(args.duration);
  if (args.postgres) database = await createTestDatabase('bench_gateway');
  try {
    if (!args.baseline) return await run(duration);
    if (args.streams || args['first-byte'] || args.profile || args.alloc || args['alloc-old']) throw new Error('--baseline: for the throughput run only');
    if (args.postgres) baselineDatabase = await createTestDatabase('bench_gateway_baseline');
    await withCheckout(args.baseline, (dir) => {
      baselineCheckout = dir;
      return run(duration);
    });
  } finally {
    await Promise.all([database?.drop(), baselineDatabase?.drop()]);
  }
}

/** Where the --baseline checkout is while the run lasts. */
let baselineCheckout: string | undefined;

async function run(duration: number): Promise<void> {
  if (args.streams) await streams(Number(args.streams), Number(args['chunk-ms']), Number(args.chunks), Number(args.ramp));
  else if (args['first-byte']) await firstBytesOnly(Number(args['first-byte']));
  else if (args.profile || args.alloc || args['alloc-old']) await profile(duration);
  else await throughput(duration, Number(args.rounds));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
