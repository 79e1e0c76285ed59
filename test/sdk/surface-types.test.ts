// Issue 13, type-level surface: resource methods typed exactly by the generated client (a
// snippet compiled with the TypeScript language service, its errors read line by line),
// what editors show on hover (readable type names, summary, description, parameters,
// @deprecated with the replacement) and the package's export list (readme.test.ts runs
// the same hover checks against the built index.d.ts). Kept apart from surface.test.ts:
// compiling blocks the event loop for seconds, which the socket tests there should not share.
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { resourceMethods } from '../../generated/sdk/methods.js';
import { typeErrors } from './support/compile.js';
import { readSurface } from './support/hover.js';
import { expectDocumentedSurface } from './support/surface-checks.js';

const ROOT = resolve(import.meta.dirname, '../..');

// ---------------------------------------------------------------- 1. typed from the contract

describe('resource methods', () => {
  it('are typed from the generated operation types (drift is a compile error)', () => {
    const pascal = (id: string) => id[0]!.toUpperCase() + id.slice(1);
    // Each body and query argument is exactly the generated client's type for that operation
    // (identical, so neither `any` nor an extra optional field passes): a changed schema
    // regenerates both, a stale or hand-written type fails here.
    const same = resourceMethods.flatMap(([at, id, path, body, query]) => [
      ...(body ? [`const body${pascal(id)}: Same<NonNullable<Parameters<typeof p.${at}>[${path.length}]>, NonNullable<G.${pascal(id)}Data['body']>> = true;`] : []),
      ...(query ? [`const query${pascal(id)}: Same<NonNullable<Parameters<typeof p.${at}>[${path.length + body}]>, NonNullable<G.${pascal(id)}Data['query']>> = true;`] : []),
    ]);
    const lines = [
      `import { Platform, type Model } from ${JSON.stringify(join(ROOT, 'sdk/src/index.js'))};`,
      `import type * as G from ${JSON.stringify(join(ROOT, 'generated/client/types.gen.js'))};`,
      'declare const p: Platform;',
      'type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;',
      ...same,
      "p.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });",
      "p.chat.completions.create({ model: 'm', messages: 'not a list' });",
      "p.management.agents.update('agt_1', { status: 'inactive' });",
      "p.management.agents.update('agt_1', { status: 'sleeping' });",
      "p.management.agents.get('agt_1');",
      'p.management.agents.get();',
      'p.chat.completions.createV1;',
      'const models: Promise<Model[]> = p.models.list().then((list) => list.data);',
    ];
    expect(same.length).toBeGreaterThan(10);
    expect(typeErrors(lines)).toEqual({
      // The body must be the contract's: a wrong shape and a value outside an enum.
      "p.chat.completions.create({ model: 'm', messages: 'not a list' });": ['TS2769'],
      "p.management.agents.update('agt_1', { status: 'sleeping' });": ['TS2322'],
      // The path parameter is required.
      'p.management.agents.get();': ['TS2554'],
      // Deprecated operations are not in the namespaces.
      'p.chat.completions.createV1;': ['TS2551'],
    });
  }, 120_000);
});

// ---------------------------------------------------------------- 2. JSDoc on hover

describe('docs on every method', () => {
  it('shows readable, exported type names, the docs and @deprecated with the replacement on hover (source)', () => {
    expectDocumentedSurface(join(ROOT, 'sdk/src/index.js'));
  }, 120_000);

  it('shows the summary, the description and each parameter', () => {
    const { hovers } = readSurface(join(ROOT, 'sdk/src/index.js'), ['chat.completions.create', 'management.agents.get', 'createResponseV1', 'getAgent']);
    expect(hovers['chat.completions.create']!.doc).toMatch(/^Create a guarded chat completion\n\nCanonical guarded v2 chat completion/);
    expect(hovers['chat.completions.create']!.display).toContain('create(body: ChatCompletionCreateParamsStreaming, options?: RequestOptions): APIPromise<ChatCompletionStream>');
    expect(hovers['management.agents.get']!.display).toContain('get(agentId: string, options?: RequestOptions): APIPromise<AgentResponse>');
    expect(hovers['management.agents.get']!.doc).toMatch(/^Get an agent/);
    expect(hovers['management.agents.get']!.tags['param agentId']).toMatch(/agent_id/);
    expect(hovers['createResponseV1']!.tags.deprecated).toMatch(/^Use `client\.responses\.create\(\)` \(createResponse\) instead\./);
    expect(hovers['getAgent']!.tags['param params.path.agent_id']).toMatch(/Agent identifier/);
  }, 60_000);
});

// ---------------------------------------------------------------- 3. exports

describe('public exports', () => {
  it('are what a user imports, not the generator internals', async () => {
    const program = ts.createProgram([join(ROOT, 'sdk/src/index.ts')], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true });
    const checker = program.getTypeChecker();
    const names = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, 'sdk/src/index.ts'))!)!).map((s) => s.name);
    expect(names.length).toBeLessThan(240); // 465 before issue 13
    for (const name of ['Platform', 'APIError', 'ChatCompletionStream', 'PagePromise', 'ChatCompletion', 'ChatCompletionCreateParams', 'ChatCompletionCreateParamsStreaming', 'Model', 'EmbeddingCreateParams', 'EmbeddingsResponse', 'Agent']) {
      expect(names, name).toContain(name);
    }
    // A readable name for every placed operation's body, query and answer.
    for (const name of ['HealthResponse', 'AgentListResponse', 'AgentCreateParams', 'BillingAccountResponse', 'UsageReportResponse', 'CreatedKeyResponse', 'ResponseObject', 'MetricsResponse', 'UsageReportParams']) {
      expect(names, name).toContain(name);
    }
    // The helpers the low-level methods are typed with, and the namespaces' interfaces.
    for (const name of ['QueryOf', 'PathOf', 'StreamOf', 'ResultOf', 'OperationMethod', 'PlatformResources', 'ManagementAgentsResource', 'PlatformOperations']) {
      expect(names, name).toContain(name);
    }
    expect(names.filter((n) => /(Data|Responses|Errors)$|^Schemas$|^createClient$|^PlatformApi$/.test(n))).toEqual([]);
    // `Response` would shadow the DOM's; the error factories and tables are internal.
    expect(names.filter((n) => ['Response', 'makeAPIError', 'errorCatalog', 'errorClasses', 'statusErrorClasses', 'ErrorClasses'].includes(n))).toEqual([]);
  }, 60_000);
});
