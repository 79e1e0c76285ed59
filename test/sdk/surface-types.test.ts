// Issue 13, type-level surface: what editors show on hover (readable type names, summary,
// description, parameters, @deprecated with the replacement) and the package's export
// list, read with the TypeScript language service (readme.test.ts runs the same hover
// checks against the built index.d.ts). Kept apart from surface.test.ts: compiling blocks the event
// loop for seconds, which the socket tests there should not share.
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readSurface } from './support/hover.js';
import { expectDocumentedSurface } from './support/surface-checks.js';

const ROOT = resolve(import.meta.dirname, '../..');

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
