// Issue 13, type-level surface: the JSDoc editors show on hover (summary, description,
// parameters, @deprecated with the replacement) and the package's export list, read with
// the TypeScript compiler API. Kept apart from surface.test.ts: compiling blocks the event
// loop for seconds, which the socket tests there should not share.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { routes } from '../../generated/contract/routes.js';

const ROOT = resolve(import.meta.dirname, '../..');

// ---------------------------------------------------------------- 2. JSDoc on hover

describe('docs on every method', () => {
  it('shows summary, description, parameters and @deprecated with the replacement on hover', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdk-hover-'));
    try {
      const file = join(dir, 'hover.ts');
      writeFileSync(
        file,
        `import { Platform } from ${JSON.stringify(join(ROOT, 'sdk/src/index.js'))};
declare const p: Platform;
p.chat.completions.create;
p.management.agents.get;
p.createResponseV1;
p.createGuardedChatCompletion;
`,
      );
      const program = ts.createProgram([file], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true });
      const checker = program.getTypeChecker();
      const source = program.getSourceFile(file)!;
      const hover: Record<string, { doc: string; tags: Record<string, string> }> = {};
      source.forEachChild((node) => {
        if (!ts.isExpressionStatement(node) || !ts.isPropertyAccessExpression(node.expression)) return;
        const symbol = checker.getSymbolAtLocation(node.expression.name)!;
        const tags: Record<string, string> = {};
        for (const tag of symbol.getJsDocTags(checker)) tags[tag.name === 'param' ? `param ${ts.displayPartsToString(tag.text).split(' ')[0]}` : tag.name] = ts.displayPartsToString(tag.text);
        hover[node.expression.getText(source)] = { doc: ts.displayPartsToString(symbol.getDocumentationComment(checker)), tags };
      });
      expect(hover['p.chat.completions.create']!.doc).toMatch(/^Create a guarded chat completion\n\nCanonical guarded v2 chat completion/);
      expect(hover['p.chat.completions.create']!.doc).toContain('`POST /ai/v2/guarded/chat/completions`');
      expect(hover['p.chat.completions.create']!.tags).toHaveProperty('param body');
      expect(hover['p.management.agents.get']!.doc).toMatch(/^Get an agent/);
      expect(hover['p.management.agents.get']!.tags['param agentId']).toMatch(/agent_id/);
      expect(hover['p.createResponseV1']!.tags.deprecated).toMatch(/Use `client\.responses\.create\(\)` \(createResponse\) instead/);
      expect(hover['p.createGuardedChatCompletion']!.tags.deprecated).toBeUndefined();
      expect(hover['p.createGuardedChatCompletion']!.doc).toContain('Prefer `client.chat.completions.create()`');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('marks every deprecated operation @deprecated in the generated surface', () => {
    const generated = readFileSync(join(ROOT, 'generated/sdk/resources.ts'), 'utf8');
    for (const route of routes.filter((r) => r.deprecated)) {
      expect(generated, route.operationId).toMatch(new RegExp(`@deprecated[^\\n]*\\n\\s*\\*/\\n\\s*${route.operationId}: OperationMethod`));
    }
  });
});

// ---------------------------------------------------------------- 3. exports

describe('public exports', () => {
  it('are what a user imports, not the generator internals', async () => {
    const program = ts.createProgram([join(ROOT, 'sdk/src/index.ts')], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true });
    const checker = program.getTypeChecker();
    const names = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, 'sdk/src/index.ts'))!)!).map((s) => s.name);
    expect(names.length).toBeLessThan(160); // 465 before issue 13
    for (const name of ['Platform', 'APIError', 'ChatCompletionStream', 'PagePromise', 'ChatCompletion', 'ChatCompletionCreateParams', 'ChatCompletionCreateParamsStreaming', 'Model', 'EmbeddingCreateParams', 'EmbeddingsResponse', 'Agent']) {
      expect(names, name).toContain(name);
    }
    expect(names.filter((n) => /(Data|Responses|Errors)$|^Schemas$|^createClient$|^PlatformApi$/.test(n))).toEqual([]);
  }, 60_000);
});

