// The README's examples are the files in sdk/examples/, included verbatim; they compile
// under strict settings as a consumer would write them. The SDK source compiles without
// Node's types (no Node built-in can reach the browser / edge runtime).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../sdk/src/index.js';

const run = promisify(execFile);
const SDK = resolve(import.meta.dirname, '../../sdk');
const TSC = resolve(import.meta.dirname, '../../node_modules/typescript/bin/tsc');
const readme = readFileSync(join(SDK, 'README.md'), 'utf8');

describe('sdk/README.md', () => {
  const included = [...readme.matchAll(/<!-- example: (examples\/[\w-]+\.ts) -->\n```ts\n([\s\S]*?)\n```/g)].map((m) => ({ file: m[1]!, code: m[2]! }));

  it('includes every example file, verbatim', () => {
    const files = readdirSync(join(SDK, 'examples')).filter((f) => f.endsWith('.ts')).map((f) => `examples/${f}`).sort();
    expect(included.map((e) => e.file).sort()).toEqual(files);
    for (const { file, code } of included) expect(code, file).toBe(readFileSync(join(SDK, file), 'utf8').trimEnd());
  });

  it('has no other TypeScript block that would escape compilation', () => {
    const blocks = readme.match(/```ts\n/g) ?? [];
    expect(blocks).toHaveLength(included.length);
  });

  it('names only error classes the package exports', () => {
    const names = new Set(readme.match(/\b[A-Z][A-Za-z]+Error\b/g));
    for (const name of names) expect(sdk, name).toHaveProperty(name);
  });

  it('compiles its examples (strict) and the SDK source without Node types', async () => {
    for (const project of ['examples/tsconfig.json', 'tsconfig.json']) {
      const result = await run(process.execPath, [TSC, '-p', project], { cwd: SDK }).catch((error: { stdout: string }) => error);
      expect(result.stdout, project).toBe('');
    }
  }, 60_000);
});
