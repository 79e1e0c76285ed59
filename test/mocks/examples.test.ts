// Named examples on request (issue 9): `Prefer: example=<name>` (with or without `code=`)
// answers any named example of the contract, and streams a named SSE example event by event.
// openapi.yaml gains its named `examples` maps over time; this file serves a copy of it with
// a few of them added, so it does not depend on which ones exist today.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routesById, type OperationId } from '../../generated/contract/routes.js';
import { startMock, type RunningMock } from '../../mocks/serve.js';
import { deref } from '../../scripts/codegen/contract.js';
import { Platform, SpendingLimitExceededError } from '../../sdk/src/index.js';
import { contractDocument } from '../support/contract.js';

type Json = Record<string, any>;
const STREAM_DELAY_MS = 20;
const TRACE_ID = /^trc_[0-9a-f]{32}$/;
const STREAM_TRACE = 'trc_0123456789abcdef0123456789abcdef';

const chunk = (delta: Json, finish: string | null, extra: Json = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-fixture', object: 'chat.completion.chunk', created: 1735689600, model: 'gloo-openai-gpt-5-mini', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
const aiError = (code: number, name: string, message: string, trace: string) => ({
  error: { code, name, message, retryable: false, category: 'client', description: message },
  trace_id: trace,
});

const FIXTURE = {
  quota_exceeded: aiError(1019, 'QUOTA_EXCEEDED', 'The monthly quota of the key is used up.', 'trc_01JDQFIXTURE0000000000000001'),
  guardrail_blocked: aiError(1015, 'GUARDRAIL_BLOCKED', 'The request was blocked by a guardrail.', 'trc_01JDQFIXTURE0000000000000002'),
  in_stream_error:
    chunk({ role: 'assistant', content: 'Hope is' }, null) +
    chunk({}, 'error', { error: { code: 2009, name: 'CONNECTION_DROPPED', message: 'The provider connection dropped.', retryable: true }, trace_id: STREAM_TRACE }) +
    'data: [DONE]\n\n',
  content_filter_end: chunk({ role: 'assistant', content: 'I cannot' }, null) + chunk({}, 'content_filter') + 'data: [DONE]\n\n',
  response_failed:
    'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_f","status":"in_progress"}}\n\n' +
    'event: response.failed\ndata: {"type":"response.failed","sequence_number":1,"response":{"id":"resp_f","status":"failed","error":{"code":"server_error","message":"The provider failed."}}}\n\n',
};

/** Replaces the operation's (status, media type) `example` by an `examples` map: `ok` (the old example) first, then `extra`. */
function addExamples(doc: Json, operationId: OperationId, status: number, mediaType: string, extra: Record<string, unknown>) {
  const route = routesById[operationId];
  const responses = doc.paths[route.path][route.method].responses;
  const response = structuredClone(deref(doc, responses[String(status)])); // inlined: the shared component stays as it is
  const media = response.content[mediaType];
  const ok = media.example ?? deref(doc, Object.values<Json>(media.examples ?? {})[0] ?? {}).value;
  delete media.example;
  media.examples = { ok: { value: ok }, ...media.examples, ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { summary: k, value: v }])) };
  responses[String(status)] = response;
}

let mock: RunningMock;
let dir: string;
beforeAll(async () => {
  const doc = structuredClone(contractDocument);
  addExamples(doc, 'createGuardedChatCompletion', 429, 'application/json', { quota_exceeded: FIXTURE.quota_exceeded });
  addExamples(doc, 'createGuardedChatCompletion', 403, 'application/json', { guardrail_blocked: FIXTURE.guardrail_blocked });
  addExamples(doc, 'createGuardedChatCompletion', 200, 'text/event-stream', {
    in_stream_error: FIXTURE.in_stream_error,
    content_filter_end: FIXTURE.content_filter_end,
  });
  addExamples(doc, 'createResponse', 200, 'text/event-stream', { response_failed: FIXTURE.response_failed });
  // Components may hold named examples too (`$ref: '#/components/examples/...'`).
  doc.components.examples = { ...doc.components.examples, spending_limit_exceeded: { value: deref(doc, deref(doc, doc.components.responses.AITooManyRequests).content['application/json']).example } };
  const route = routesById.createGuardedChatCompletion;
  doc.paths[route.path][route.method].responses['429'].content['application/json'].examples.spending_limit_exceeded = { $ref: '#/components/examples/spending_limit_exceeded' };
  dir = mkdtempSync(join(tmpdir(), 'mock-fixture-'));
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
  mock = await startMock({ port: 0, streamDelayMs: STREAM_DELAY_MS, contract: join(dir, 'openapi.json') });
}, 60_000);
afterAll(async () => {
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

const GUARDED = routesById.createGuardedChatCompletion.path;
const RESPONSES = routesById.createResponse.path;
const ASK = { messages: [{ role: 'user', content: 'What is hope?' }], auto_routing: true };

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${mock.url}${path}`, {
    method: 'POST',
    headers: { Authorization: 'Bearer sk_test', 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** The body's chunks as they arrive, with their arrival times. */
async function chunks(res: Response) {
  const out: Array<{ at: number; text: string }> = [];
  const decoder = new TextDecoder();
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) out.push({ at: performance.now(), text: decoder.decode(bytes) });
  return out;
}

describe('Prefer: example=<name> on JSON answers', () => {
  it('combines with code=STATUS', async () => {
    const res = await post(GUARDED, ASK, { Prefer: 'code=429, example=quota_exceeded' });
    expect(res.status).toBe(429);
    const body = await res.json();
    expect(body).toEqual(FIXTURE.quota_exceeded);
    expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
  });

  it('finds the status by itself when only example= is sent', async () => {
    const res = await post(GUARDED, ASK, { Prefer: 'example=guardrail_blocked' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual(FIXTURE.guardrail_blocked);
  });

  it('serves a named example that is a components/examples $ref, as the SDK error it stands for', async () => {
    const platform = new Platform({ apiKey: 'sk_test', baseUrl: mock.url, managementBaseUrl: mock.url, maxRetries: 0 });
    const error = await platform
      .createGuardedChatCompletion({ body: ASK as never }, { headers: { Prefer: 'code=429, example=spending_limit_exceeded' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
  });

  it('answers the `ok` (first) example when nothing is preferred', async () => {
    const res = await post(GUARDED, ASK);
    expect(res.status).toBe(200);
    expect((await res.json()).object).toBe('chat.completion');
  });

  it('refuses an unknown name with the operation\'s error shape, a trace id and the known names', async () => {
    const res = await post(GUARDED, ASK, { Prefer: 'example=nope' });
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.trace_id).toMatch(TRACE_ID);
    expect(body.error.message).toContain('quota_exceeded (429)');
    expect(body.error.message).toContain('in_stream_error (200, streaming)');
  });

  it('says so when a streaming example is asked for without streaming', async () => {
    const res = await post(GUARDED, ASK, { Prefer: 'example=in_stream_error' });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toContain('"stream": true');
  });
});

describe('Prefer: example=<name> on streams', () => {
  it('streams the named in-stream error event by event, with the event\'s trace id as X-Trace-Id', async () => {
    const res = await post(GUARDED, { ...ASK, stream: true }, { Prefer: 'example=in_stream_error' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-trace-id')).toBe(STREAM_TRACE);
    const received = await chunks(res);
    expect(received.map((c) => c.text).join('')).toBe(FIXTURE.in_stream_error);
    expect(received.length).toBeGreaterThanOrEqual(3);
    expect(received.at(-1)!.at - received[0].at).toBeGreaterThanOrEqual(2 * STREAM_DELAY_MS * 0.8);
  });

  it('streams the named content-filter end on Accept: text/event-stream, with code=200', async () => {
    const res = await post(GUARDED, ASK, { Accept: 'text/event-stream', Prefer: 'code=200, example=content_filter_end' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(FIXTURE.content_filter_end);
  });

  it('streams a named Responses failure as named events', async () => {
    const res = await post(RESPONSES, { auto_routing: true, input: 'Define grace.', stream: true }, { Prefer: 'example=response_failed' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(FIXTURE.response_failed);
  });

  it('streams the `ok` example by default', async () => {
    const res = await post(GUARDED, { ...ASK, stream: true });
    const text = await res.text();
    expect(text).toContain('"finish_reason":"stop"');
    expect(text).not.toContain('"finish_reason":"error"');
  });

  it('answers a named error example of a stream request as JSON, before any stream', async () => {
    const res = await post(GUARDED, { ...ASK, stream: true }, { Prefer: 'example=quota_exceeded' });
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual(FIXTURE.quota_exceeded);
  });

  it('still validates the request before streaming a named example', async () => {
    const res = await post(GUARDED, { auto_routing: true, stream: true }, { Prefer: 'example=in_stream_error' });
    expect(res.status).toBe(422);
    expect((await res.json()).trace_id).toMatch(TRACE_ID);
  });
});
