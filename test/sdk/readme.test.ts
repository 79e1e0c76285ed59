// The README's examples are the files in sdk/examples/, included verbatim; they compile
// under strict settings as a consumer would write them. The SDK source compiles without
// Node's types (no Node built-in can reach the browser / edge runtime).
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../sdk/src/index.js';
import { expectDocumentedSurface } from './support/surface-checks.js';

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
    // JavaScript's own (`TypeError`, ...) aside.
    for (const name of [...names].filter((n) => !(n in globalThis))) expect(sdk, name).toHaveProperty(name);
  });

  it('compiles its examples (strict) and the SDK source without Node types', async () => {
    for (const project of ['examples/tsconfig.json', 'tsconfig.json']) {
      const result = await run(process.execPath, [TSC, '-p', project], { cwd: SDK }).catch((error: { stdout: string }) => error);
      expect(result.stdout, project).toBe('');
    }
  }, 180_000);

});

describe('the built package (its .d.ts, as installed users get it)', () => {
  let work: string;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'sdk-readme-'));
    // A build of its own (pack.test.ts builds dist/ at the same time).
    await run(resolve(SDK, '../node_modules/.bin/tsup'), ['--out-dir', join(work, 'dist')], { cwd: SDK });
  }, 240_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('compiles every example against it', async () => {
    const examples = readdirSync(join(SDK, 'examples')).filter((f) => f.endsWith('.ts')).map((f) => join(SDK, 'examples', f));
    const config = {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        types: ['node'],
        typeRoots: [resolve(SDK, '../node_modules/@types')],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        noEmit: true,
        paths: { '@inference-platform/sdk': [join(work, 'dist', 'index.d.ts')] },
      },
      files: examples,
    };
    writeFileSync(join(work, 'tsconfig.json'), JSON.stringify(config));
    const result = await run(process.execPath, [TSC, '-p', join(work, 'tsconfig.json')], { cwd: work }).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  }, 240_000);

  it('shows readable, exported type names, the docs and @deprecated with the replacement on hover', () => {
    expectDocumentedSurface(join(work, 'dist', 'index.js'));
  }, 120_000);
});
