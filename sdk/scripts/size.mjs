#!/usr/bin/env node
// Prints the size of the built ESM bundle (minified, then gzipped) against the budget, next
// to openai-node's measured the same way, and exits non-zero over the budget. It bundles for
// the browser, so a Node built-in reaching the runtime fails here too. Run `npm run build` first.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
// openai-node is a devDependency of the repository (bench/sdk.ts calls it too).
import { VERSION as OPENAI_VERSION } from 'openai/version';

const BUDGET_BYTES = 20 * 1024;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'index.js');
if (!existsSync(entry)) {
  console.error('dist/index.js is missing: run `npm run build` (in sdk/) first.');
  process.exit(2);
}

/** An ESM entry (a file, or a package resolved as a browser bundler would) bundled, minified and gzipped. */
async function measure(entryPoint) {
  const result = await build({
    entryPoints: [entryPoint],
    absWorkingDir: root,
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  const minified = result.outputFiles[0].contents;
  return { min: minified.length, gzip: gzipSync(minified, { level: 9 }).length };
}

const ours = await measure(entry);
const reference = { name: 'openai', version: OPENAI_VERSION, ...(await measure('openai')) };
const raw = readFileSync(entry).length;
const kb = (n) => `${(n / 1024).toFixed(1)} kB`;
const verdict = ours.gzip <= BUDGET_BYTES ? 'within' : 'OVER';
console.log(`@inference-platform/sdk dist/index.js: ${kb(raw)} raw, ${kb(ours.min)} min, ${kb(ours.gzip)} min+gzip (${ours.gzip} bytes) — ${verdict} the ${kb(BUDGET_BYTES)} budget`);
console.log(
  `reference: ${reference.name} ${reference.version} bundled the same way = ${kb(reference.min)} min, ${kb(reference.gzip)} min+gzip; ours: ${kb(ours.gzip)} (${Math.round((ours.gzip / reference.gzip) * 100)} % of it)`,
);
console.log(JSON.stringify({ raw, ...ours, budget: BUDGET_BYTES, reference }));
process.exit(verdict === 'within' ? 0 : 1);
