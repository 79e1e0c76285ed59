#!/usr/bin/env node
// Prints the size of the built ESM bundle (minified, then gzipped) against the budget and
// exits non-zero over it. It bundles for the browser, so a Node built-in reaching the
// runtime fails here too. Run `npm run build` first.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const BUDGET_BYTES = 20 * 1024;
// A recorded reference, not measured here (this script installs nothing): the openai-node
// package bundled the same way (esbuild, minified, ESM, browser, es2022, gzip level 9).
const REFERENCE = { name: 'openai', version: '6.49.0', gzipKB: 35.1, measured: '2026-11-22' };
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'index.js');
if (!existsSync(entry)) {
  console.error('dist/index.js is missing: run `npm run build` (in sdk/) first.');
  process.exit(2);
}

const result = await build({
  entryPoints: [entry],
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  write: false,
  logLevel: 'silent',
});
const minified = result.outputFiles[0].contents;
const raw = readFileSync(entry).length;
const gzipped = gzipSync(minified, { level: 9 }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} kB`;
const verdict = gzipped <= BUDGET_BYTES ? 'within' : 'OVER';
const share = Math.round((gzipped / 1024 / REFERENCE.gzipKB) * 100);
console.log(`@inference-platform/sdk dist/index.js: ${kb(raw)} raw, ${kb(minified.length)} min, ${kb(gzipped)} min+gzip (${gzipped} bytes) — ${verdict} the ${kb(BUDGET_BYTES)} budget`);
console.log(
  `reference (recorded, not measured by this script): ${REFERENCE.name} ${REFERENCE.version} bundled the same way = ${REFERENCE.gzipKB.toFixed(1)} kB min+gzip, measured on ${REFERENCE.measured}; ours: ${kb(gzipped)} (${share} % of it)`,
);
console.log(JSON.stringify({ raw, min: minified.length, gzip: gzipped, budget: BUDGET_BYTES, reference: REFERENCE }));
process.exit(gzipped <= BUDGET_BYTES ? 0 : 1);
