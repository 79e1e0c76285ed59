// Seeded contract fuzzing: thousands of valid and broken requests against the in-process
// platform, every answer checked against openapi.yaml (test/support/conformance.ts). Any
// 5xx, error without a trace id, answer the contract does not describe, unanswered request
// or a platform that stops answering is a finding; the run must have none. `npm run fuzz`
// runs bigger campaigns.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes, routesById, type OperationId } from '../../generated/contract/routes.js';
import { defaultExample } from '../../scripts/codegen/contract.js';
import { conformanceProblems, type ObservedResponse } from '../support/conformance.js';
import { contractDocument } from '../support/contract.js';
import { startFuzzTarget, type FuzzTarget } from '../support/fuzz/platform.js';
import { runFuzz, type Finding } from '../support/fuzz/run.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';

const SEED = 20_251_123;

const describeFinding = (f: Finding) => `${f.operationId} ${f.status ?? '(no answer)'} ${f.rule} ${f.subject} ×${f.count}: ${f.message.slice(0, 160)} — e.g. ${f.example}`;

describe('contract fuzzing on PGlite', () => {
  let target: FuzzTarget;
  beforeAll(async () => {
    target = await startFuzzTarget();
  }, 60_000);
  afterAll(() => target?.platform.close());

  it('3,000 seeded requests find nothing', async () => {
    const result = await runFuzz(target, { requests: 3_000, seed: SEED, concurrency: 4, timeoutMs: 10_000 });
    expect(result.sent).toBe(3_000);
    expect(result.findings.map(describeFinding)).toEqual([]);
    // A campaign that never gets past validation, or never fails it, tests little: every
    // operation must have succeeded and been refused as invalid at least once.
    const seen = (operationId: OperationId) => [...(result.statuses.get(operationId)?.keys() ?? [])];
    const unsucceeded = routes.filter((r) => !seen(r.operationId).some((s) => s.startsWith('2'))).map((r) => r.operationId);
    const unrefused = routes.filter((r) => !seen(r.operationId).some((s) => s === '400' || s === '422')).map((r) => r.operationId);
    expect({ unsucceeded, unrefused }).toEqual({ unsucceeded: [], unrefused: [] });
  }, 120_000);
});

describePostgres('contract fuzzing on PostgreSQL', () => {
  const database = useTestDatabase('fuzz');

  it('600 seeded requests find nothing', async () => {
    // An empty database: the platform migrates it and bootstraps the admin key on start.
    const target = await startFuzzTarget({ databaseUrl: database.url });
    try {
      const result = await runFuzz(target, { requests: 600, seed: SEED + 1, concurrency: 4, timeoutMs: 10_000 });
      expect(result.findings.map(describeFinding)).toEqual([]);
    } finally {
      await target.platform.close();
    }
  }, 120_000);
});

describe('conformanceProblems', () => {
  type Json = Record<string, any>;
  const shared = (node: Json, kind: 'responses' | 'headers'): Json => (node.$ref ? contractDocument.components[kind][node.$ref.split('/').pop()] : node);

  /** The contract's own example answer for (operation, status), with every header it declares. */
  function exampleAnswer(operationId: OperationId, status: number): ObservedResponse {
    const route = routesById[operationId];
    const response = shared(contractDocument.paths[route.path][route.method].responses[String(status)], 'responses');
    const body = defaultExample(contractDocument, response.content['application/json']) as Json;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const [name, header] of Object.entries<Json>(response.headers ?? {})) headers[name.toLowerCase()] = String(shared(header, 'headers').example);
    if (headers['x-trace-id'] && body.trace_id) headers['x-trace-id'] = body.trace_id;
    return { status, headers, body: JSON.stringify(body) };
  }
  const rules = (problems: { rule: string; subject: string }[]) => problems.map((p) => `${p.rule} ${p.subject}`);

  it("accepts the contract's own example answer", () => {
    expect(conformanceProblems('getKey', { method: 'GET' }, exampleAnswer('getKey', 404))).toEqual([]);
  });

  it('reports an undeclared status, an undeclared platform header, a wrong body and a missing trace id', () => {
    const answer = exampleAnswer('getKey', 404);
    expect(rules(conformanceProblems('getKey', { method: 'GET' }, { ...answer, status: 599 }))).toContain('status 599');
    expect(rules(conformanceProblems('getKey', { method: 'GET' }, { ...answer, headers: { ...answer.headers, 'x-sources-returned': 'true' } }))).toEqual([
      'header x-sources-returned',
    ]);
    // The error handler sends X-Should-Retry on errors only: on a success it is undeclared.
    const ok = exampleAnswer('getKey', 200);
    expect(rules(conformanceProblems('getKey', { method: 'GET' }, { ...ok, headers: { ...ok.headers, 'x-should-retry': 'false' } }))).toEqual(['header x-should-retry']);
    const problems = rules(conformanceProblems('getKey', { method: 'GET' }, { ...answer, body: JSON.stringify({ detail: 'x' }) }));
    expect(problems).toContain('trace-id missing');
    expect(problems.some((p) => p.startsWith('body '))).toBe(true);
  });

  it('reports a field the contract does not declare, at any depth, and accepts every declared one', () => {
    const answer = exampleAnswer('getKey', 404);
    const body = JSON.parse(answer.body);
    const sent = (value: unknown) => rules(conformanceProblems('getKey', { method: 'GET' }, { ...answer, body: JSON.stringify(value) }));
    expect(sent({ ...body, debug: 'x' })).toContain('body  must NOT have unevaluated properties');
    expect(sent({ ...body, error: { ...body.error, stack: 'x' } })).toContain('body /error must NOT have unevaluated properties');
    const ok = exampleAnswer('getKey', 200);
    expect(conformanceProblems('getKey', { method: 'GET' }, ok)).toEqual([]);
  });

  it('checks every event of a stream against the event schema', () => {
    const body = 'data: {"object":"chat.completion.chunk"}\n\ndata: [DONE]\n\n';
    const problems = conformanceProblems('createGuardedChatCompletion', { method: 'POST' }, { status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    expect(problems.map((p) => p.rule)).toContain('event');
  });

  it('reports an undeclared field in a stream event', () => {
    const events = (defaultExample(contractDocument, shared(contractDocument.paths['/ai/v2/guarded/chat/completions'].post.responses['200'], 'responses').content['text/event-stream']) as string)
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'));
    const headers = { 'content-type': 'text/event-stream', 'x-trace-id': 'trc_0123456789abcdef0123456789abcdef' };
    const check = (body: string) => conformanceProblems('createGuardedChatCompletion', { method: 'POST' }, { status: 200, headers, body });
    expect(check(`${events.join('\n\n')}\n\ndata: [DONE]\n\n`)).toEqual([]);
    const chunk = JSON.parse(events[1].slice(6));
    chunk.choices[0].delta.internal = 'x';
    expect(check(`data: ${JSON.stringify(chunk)}\n\n`).map((p) => p.subject)).toContain('/choices/0/delta must NOT have unevaluated properties');
  });
});
