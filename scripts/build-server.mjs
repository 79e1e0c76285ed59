// Builds the server for `npm start`: server/main.ts bundled with esbuild into
// dist/server/main.js (ESM, node_modules left external, generated/ bundled in), and each
// worker thread's code into a file of its own beside it (server/workers/worker-script.ts finds
// it there). Plain JavaScript so that building needs no TypeScript loader.
//
//   node scripts/build-server.mjs            build
//   node scripts/build-server.mjs --if-stale build only when a source is newer than the bundle
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
// Shared with the benchmarks' bundle (bench/gateway-servers.ts), so that they measure what ships.
import bundleOptions from './bundle-options.json' with { type: 'json' };

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist/server');
/** Output name (without .js) → entry point. */
const entryPoints = {
  main: 'server/main.ts',
  'sentence-encoder-worker': 'server/providers/local/sentence-encoder/worker.ts',
  'ingestion-parse-worker': 'server/data/ingestion/parse-worker.ts',
};
// What the bundle is made of: a change to any of these makes it stale.
const inputs = ['server', 'generated', 'package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build-server.mjs', 'scripts/bundle-options.json'];

function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), stat.mtimeMs);
}

/** When the oldest output was built; -1 when one is missing. */
function built() {
  try {
    return Math.min(...Object.keys(entryPoints).map((name) => statSync(join(outdir, `${name}.js`)).mtimeMs));
  } catch {
    return -1;
  }
}

if (process.argv.includes('--if-stale') && built() >= Math.max(...inputs.map((p) => newest(join(root, p))))) process.exit(0);

const started = performance.now();
await build({
  absWorkingDir: root,
  entryPoints,
  outdir,
  ...bundleOptions,
});
console.error(`built ${Object.keys(entryPoints).map((name) => `dist/server/${name}.js`).join(', ')} in ${Math.round(performance.now() - started)} ms`);
