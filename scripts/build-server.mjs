// Builds the server for `npm start`: server/main.ts bundled with esbuild into
// dist/server/main.js (ESM, node_modules left external, generated/ bundled in), and each
// worker thread's code into a file of its own beside it (server/workers/worker-script.ts finds
// it there); and the operator console (console/src) for the browser into dist/console, which
// the management port serves at /console (server/console/assets.ts). Plain JavaScript so that
// building needs no TypeScript loader.
//
//   node scripts/build-server.mjs            build
//   node scripts/build-server.mjs --if-stale build only when a source is newer than the bundle
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
// Shared with the benchmarks' bundle (bench/gateway-servers.ts), so that they measure what ships.
import bundleOptions from './bundle-options.json' with { type: 'json' };
import consoleOptions from '../console/bundle-options.json' with { type: 'json' };

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist/server');
const consoleDir = join(root, 'dist/console');
/** Output name (without .js) → entry point. */
const entryPoints = {
  main: 'server/main.ts',
  'sentence-encoder-worker': 'server/providers/local/sentence-encoder/worker.ts',
  'ingestion-parse-worker': 'server/data/ingestion/parse-worker.ts',
};
// What the bundle is made of: a change to any of these makes it stale.
const inputs = ['server', 'console', 'generated', 'package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build-server.mjs', 'scripts/bundle-options.json'];

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
    const outputs = [...Object.keys(entryPoints).map((name) => join(outdir, `${name}.js`)), join(consoleDir, 'app.js'), join(consoleDir, 'app.css')];
    return Math.min(...outputs.map((path) => statSync(path).mtimeMs));
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
await build({ absWorkingDir: root, outdir: consoleDir, ...consoleOptions });
console.error(`built ${Object.keys(entryPoints).map((name) => `dist/server/${name}.js`).join(', ')}, dist/console in ${Math.round(performance.now() - started)} ms`);
