// `npm ci --omit=dev && npm start` works: everything `npm start` loads — the prestart build
// (scripts/build-server.mjs) and the packages the bundle leaves external (every bare import
// of server/ and generated/) — is a production dependency in package-lock.json.
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;

function files(dir: string, pattern: RegExp): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return files(path, pattern);
    return pattern.test(entry.name) ? [path] : [];
  });
}

/** Package names a source loads at run time (`import type` is erased). */
function runtimeImports(path: string): string[] {
  const text = readFileSync(join(root, path), 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import(?!\s+type\b)[^'"]*?from\s*|export[^'"]*?from\s*|import\s*)['"]([^'"]+)['"]/gm), ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  return specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:') && !builtinModules.includes(s))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]));
}

describe('a production install', () => {
  it('has every package npm start loads', () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages as Record<string, { dev?: boolean }>;
    const sources = ['scripts/build-server.mjs', ...files('server', /\.ts$/), ...files('generated', /\.ts$/).filter((p) => !p.endsWith('.d.ts'))];
    const needed = [...new Set(sources.flatMap(runtimeImports))].sort();
    expect(needed).toContain('esbuild');
    expect(needed).toContain('express');
    const missing = needed.filter((name) => !lock[`node_modules/${name}`] || lock[`node_modules/${name}`].dev);
    expect(missing).toEqual([]);
  });
});
