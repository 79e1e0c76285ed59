// Idle memory of `npm start`: the built server (dist/server/main.js, as `npm start` runs it,
// with its malloc settings) is started on the embedded PGlite and on PostgreSQL, left idle,
// and its resident memory read from /proc with a breakdown from the process's own metrics
// (V8 heap, external memory such as PGlite's WebAssembly heap and buffers, the rest native).
// On PGlite the server loads the local embedding model for queries at start (search embeds
// with it: LOCAL_EMBEDDER_WARM); a second PGlite run without that shows what it holds.
//
//   npm run bench:idle-memory [-- --idle-seconds 10] [--postgres postgres://…/test]
//
// Target (issue 9): idle RSS on PostgreSQL under 200 MB.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startScriptSettings } from './start-script.js';

const ROOT = join(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    'idle-seconds': { type: 'string', default: '10' },
    postgres: { type: 'string', default: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
const IDLE_MS = Number(args['idle-seconds']) * 1000;
const TARGET_POSTGRES_MB = 200;

interface Reading {
  rssMb: number;
  anonMb: number;
  fileMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
}

const mb = (bytes: number) => bytes / 1024 / 1024;

/** Resident memory from the kernel's own accounting (kB lines of smaps_rollup). */
function residentOf(pid: number): { rss: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('Rss'), anon: kb('Anonymous'), file: kb('Rss') - kb('Anonymous') };
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

async function measure(label: string, env: Record<string, string>): Promise<Reading> {
  // As `npm start` runs it (package.json): its Node flags and malloc settings.
  const start = startScriptSettings();
  const child = spawn(process.execPath, [...start.flags, 'dist/server/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...start.env,
      PORT: '0',
      MGMT_PORT: '0',
      LOG_LEVEL: 'info',
      BOOTSTRAP_ADMIN_KEY: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const { mgmtUrl, key } = await new Promise<{ mgmtUrl: string; key: string }>((resolve, reject) => {
      let key = '';
      let mgmtUrl = '';
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const printed = /^\s+(sk_\S+)$/.exec(line);
        if (printed) key = printed[1]!;
        try {
          const entry = JSON.parse(line) as { msg?: string; mgmtUrl?: string };
          if (entry.msg === 'platform listening' && entry.mgmtUrl) mgmtUrl = entry.mgmtUrl;
        } catch {
          // the key banner is plain text
        }
        if (key && mgmtUrl) resolve({ mgmtUrl, key });
      });
      child.once('exit', (code) => reject(new Error(`${label}: server exited (${code}) before listening`)));
    });
    // One request through the pipeline, as a real idle server has served some.
    await fetch(`${mgmtUrl}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } });
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const metrics = await (await fetch(`${mgmtUrl}/api/v1/metrics`, { headers: { authorization: `Bearer ${key}` } })).text();
    const resident = residentOf(child.pid!);
    return {
      rssMb: mb(resident.rss),
      anonMb: mb(resident.anon),
      fileMb: mb(resident.file),
      heapUsedMb: mb(metric(metrics, 'nodejs_heap_size_used_bytes')),
      heapTotalMb: mb(metric(metrics, 'nodejs_heap_size_total_bytes')),
      externalMb: mb(metric(metrics, 'nodejs_external_memory_bytes')),
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

async function withPostgresDatabase<T>(run: (url: string) => Promise<T>): Promise<T | undefined> {
  const admin = new pg.Client({ connectionString: args.postgres, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (error) {
    console.log(`PostgreSQL at ${args.postgres} not reachable (${(error as Error).message}): its run is left out`);
    return undefined;
  }
  const name = `bench_idle_${process.pid}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  try {
    const url = new URL(args.postgres);
    url.pathname = `/${name}`;
    return await run(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}

execFileSync(process.execPath, ['scripts/build-server.mjs', '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
const dataDir = mkdtempSync(join(tmpdir(), 'idle-memory-'));
const rows: [string, Reading][] = [];
try {
  rows.push(['PGlite', await measure('PGlite', { DATA_DIR: join(dataDir, 'pglite'), UPLOAD_TMP_DIR: join(dataDir, 'uploads') })]);
  rows.push(['PGlite, no warm', await measure('PGlite, no warm', { DATA_DIR: join(dataDir, 'pglite-no-warm'), UPLOAD_TMP_DIR: join(dataDir, 'uploads'), LOCAL_EMBEDDER_WARM: 'false' })]);
  const postgres = await withPostgresDatabase((url) => measure('PostgreSQL', { DATABASE_URL: url, UPLOAD_TMP_DIR: join(dataDir, 'uploads') }));
  if (postgres) rows.push(['PostgreSQL', postgres]);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}

const f = (n: number) => n.toFixed(0).padStart(6);
console.log(`\nidle ${IDLE_MS / 1000} s after start and one request (MB)`);
console.log('database          RSS   anon   file   heap used  heap total  external  native rest');
for (const [label, r] of rows) {
  const rest = r.anonMb - r.heapTotalMb - r.externalMb;
  console.log(`${label.padEnd(15)} ${f(r.rssMb)} ${f(r.anonMb)} ${f(r.fileMb)}      ${f(r.heapUsedMb)}      ${f(r.heapTotalMb)}    ${f(r.externalMb)}       ${f(rest)}`);
}
const postgres = rows.find(([label]) => label === 'PostgreSQL')?.[1];
if (postgres) {
  const verdict = postgres.rssMb < TARGET_POSTGRES_MB ? 'met' : 'MISSED';
  console.log(`\ntarget: idle RSS on PostgreSQL < ${TARGET_POSTGRES_MB} MB: ${verdict} (${postgres.rssMb.toFixed(0)} MB)`);
}
