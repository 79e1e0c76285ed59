// The README's examples are the files in sdk/examples/, included verbatim; they compile
// under strict settings as a consumer would write them, and the first one shows resource
// calls, streaming, errors and pagination. The SDK source compiles without Node's types
// (no Node built-in can reach the browser / edge runtime).
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
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

  it('opens with an example of resource calls, streaming, errors and pagination', () => {
    const first = join(SDK, included[0]!.file);
    const config = ts.getParsedCommandLineOfConfigFile(join(SDK, 'examples/tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
    const program = ts.createProgram([first], config.options);
    const checker = program.getTypeChecker();
    const declaredIn = (node: ts.Node | undefined, file: string) => node?.getSourceFile().fileName.endsWith(file) ?? false;
    const isSdkError = (name: string) => {
      const value = (sdk as Record<string, unknown>)[name];
      return typeof value === 'function' && (value === sdk.PlatformError || value.prototype instanceof sdk.PlatformError);
    };
    // What the example does, read from its syntax tree and types (not from its comments).
    const shown = new Set<string>();
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && declaredIn(checker.getResolvedSignature(node)?.declaration, 'generated/sdk/resources.ts')) shown.add('resource call');
      if (ts.isForOfStatement(node) && node.awaitModifier) {
        const iterated = checker.getTypeAtLocation(node.expression).getSymbol();
        if (declaredIn(iterated?.declarations?.[0], 'sdk/src/core/streaming.ts')) shown.add('for await over a stream');
        if (iterated?.name === 'PagePromise') shown.add('for await over a list');
      }
      if (ts.isCatchClause(node)) {
        const checks = (inner: ts.Node): boolean =>
          (ts.isBinaryExpression(inner) && inner.operatorToken.kind === ts.SyntaxKind.InstanceOfKeyword && isSdkError(inner.right.getText())) || (ts.forEachChild(inner, checks) ?? false);
        if (checks(node.block)) shown.add('catch with an SDK error class');
      }
      ts.forEachChild(node, visit);
    };
    visit(program.getSourceFile(first)!);
    expect([...shown].sort()).toEqual(['catch with an SDK error class', 'for await over a list', 'for await over a stream', 'resource call']);
  }, 120_000);

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
