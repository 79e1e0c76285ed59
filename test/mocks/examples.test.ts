// Named examples of the real openapi.yaml (issue 9): every failure a frontend must handle
// that mocks/README.md documents is declared on each operation it applies to, and the mock
// serves them on request (`Prefer: example=<name>`, with or without `code=`), streaming the
// named SSE ones event by event.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes, routesById, type OperationId, type RouteDefinition } from '../../generated/contract/routes.js';
import { startMock, type RunningMock } from '../../mocks/serve.js';
import { deref } from '../../scripts/codegen/contract.js';
import { Platform, SpendingLimitExceededError } from '../../sdk/src/index.js';
import { contractDocument } from '../support/contract.js';

type Json = Record<string, any>;
const STREAM_DELAY_MS = 20;
const TRACE_ID = /^trc_[0-9a-f]{32}$/;

/** Every named example of the operation, as `<name>` -> [status, media type, value]. */
function namedExamples(route: RouteDefinition): Map<string, { status: number; mediaType: string; value: unknown }[]> {
  const found = new Map<string, { status: number; mediaType: string; value: unknown }[]>();
  for (const [status, response] of Object.entries<Json>(contractDocument.paths[route.path][route.method].responses)) {
    for (const [mediaType, media] of Object.entries<Json>(deref(contractDocument, response).content ?? {})) {
      for (const [name, example] of Object.entries<Json>(media.examples ?? {})) {
        found.set(name, [...(found.get(name) ?? []), { status: Number(status), mediaType, value: deref(contractDocument, example).value }]);
      }
    }
  }
  return found;
}

const example = (operationId: OperationId, name: string, mediaType = 'application/json') =>
  namedExamples(routesById[operationId]).get(name)!.find((e) => e.mediaType === mediaType)!.value;

/** Operations that can answer with the guardrail (guarded mode: chat, responses, grounded and the Chat API). */
const GUARDED: OperationId[] = [
  'createGuardedChatCompletion',
  'createGroundedChatCompletion',
  'createCodingChatCompletion',
  'createChatCompletionAlias',
  'createGroundedChatCompletionAlias',
  'createResponse',
  'createResponseAlias',
  'createGroundedResponse',
  'sendChatMessage',
];
const CHAT_STREAMS = routes.filter((r) => r.sse === 'data');
const RESPONSE_STREAMS = routes.filter((r) => r.sse === 'named');
const COMPLETIONS = routes.filter((r) => r.sse);
const EMBEDDINGS = routes.filter((r) => r.operationId.startsWith('createEmbeddings'));

/**
 * Where each documented failure must be declared: [status, operations]. mocks/README.md and
 * this list must name the same failures, so the two cannot drift apart either way.
 */
const WHERE: Record<string, [number, RouteDefinition[]]> = {
  spending_limit_exceeded: [429, COMPLETIONS],
  quota_exceeded: [429, [...COMPLETIONS, ...EMBEDDINGS]],
  insufficient_credit: [402, [...COMPLETIONS, ...EMBEDDINGS].filter((r) => r.operationId !== 'createCodingChatCompletion')],
  no_plan: [402, [routesById.createCodingChatCompletion]],
  gc_allowance_exhausted: [402, [routesById.createCodingChatCompletion]],
  guardrail_blocked: [403, GUARDED.map((id) => routesById[id])],
  content_filtered: [422, COMPLETIONS],
  context_window_exceeded: [400, [...COMPLETIONS, ...EMBEDDINGS]],
  unsupported_model: [400, COMPLETIONS],
  in_stream_error: [200, CHAT_STREAMS],
  in_stream_rate_limit: [200, CHAT_STREAMS],
  in_stream_bad_request: [200, CHAT_STREAMS],
  content_filter_end: [200, CHAT_STREAMS],
  response_failed: [200, RESPONSE_STREAMS],
};

describe('named failure examples of openapi.yaml', () => {
  const readme = readFileSync(new URL('../../mocks/README.md', import.meta.url), 'utf8');
  const documented = [...new Set([...readme.matchAll(/example=([a-z_]+)/g)].map((m) => m[1]))];

  it('mocks/README.md shows how to ask for exactly the failures listed here', () => {
    expect(documented.length).toBeGreaterThan(10);
    const listed = Object.keys(WHERE);
    expect({ undocumented: listed.filter((name) => !documented.includes(name)), unlisted: documented.filter((name) => !(name in WHERE)) }).toEqual({ undocumented: [], unlisted: [] });
  });

  it('declares each documented failure on every operation it applies to', () => {
    const missing: string[] = [];
    for (const [name, [status, operations]] of Object.entries(WHERE)) {
      for (const route of operations) {
        if (!namedExamples(route).get(name)?.some((e) => e.status === status)) missing.push(`${route.operationId} ${status} ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('declares guardrail_blocked on no operation that runs without the guardrail (embeddings, the direct v1 routes, data)', () => {
    const elsewhere = routes.filter((r) => !GUARDED.includes(r.operationId) && namedExamples(r).has('guardrail_blocked')).map((r) => r.operationId);
    expect(elsewhere).toEqual([]);
  });

  it('has the in-stream errors the spec names: RATE_LIMIT 2004 (retryable) and one not retryable', () => {
    const errorOf = (sse: string) => JSON.parse(sse.split('\n').filter((l) => l.includes('"finish_reason":"error"'))[0].slice(6)).error;
    expect(errorOf(example('createGuardedChatCompletion', 'in_stream_rate_limit', 'text/event-stream') as string)).toMatchObject({ code: 2004, name: 'RATE_LIMIT', retryable: true });
    expect(errorOf(example('createGuardedChatCompletion', 'in_stream_bad_request', 'text/event-stream') as string)).toMatchObject({ retryable: false });
  });
});

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock({ port: 0, streamDelayMs: STREAM_DELAY_MS });
}, 60_000);
afterAll(() => mock?.close());

const GUARDED_PATH = routesById.createGuardedChatCompletion.path;
const RESPONSES_PATH = routesById.createResponse.path;
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
    const res = await post(GUARDED_PATH, ASK, { Prefer: 'code=429, example=quota_exceeded' });
    expect(res.status).toBe(429);
    const body = await res.json();
    expect(body).toEqual(example('createGuardedChatCompletion', 'quota_exceeded'));
    expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
  });

  it('finds the status by itself when only example= is sent', async () => {
    const res = await post(GUARDED_PATH, ASK, { Prefer: 'example=guardrail_blocked' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual(example('createGuardedChatCompletion', 'guardrail_blocked'));
  });

  it('serves a named example that is a components/examples $ref, as the SDK error it stands for', async () => {
    const platform = new Platform({ apiKey: 'sk_test', baseUrl: mock.url, managementBaseUrl: mock.url, maxRetries: 0 });
    const error = await platform
      .createGuardedChatCompletion({ body: ASK as never }, { headers: { Prefer: 'code=429, example=spending_limit_exceeded' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpendingLimitExceededError);
  });

  it('answers the `ok` (first) example when nothing is preferred', async () => {
    const res = await post(GUARDED_PATH, ASK);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(example('createGuardedChatCompletion', 'ok'));
  });

  it("refuses an unknown name with the operation's error shape, a trace id and the known names", async () => {
    const res = await post(GUARDED_PATH, ASK, { Prefer: 'example=nope' });
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.trace_id).toMatch(TRACE_ID);
    expect(body.error.message).toContain('quota_exceeded (429)');
    expect(body.error.message).toContain('in_stream_error (200, streaming)');
  });

  it('says so when a streaming example is asked for without streaming', async () => {
    const res = await post(GUARDED_PATH, ASK, { Prefer: 'example=in_stream_error' });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toContain('"stream": true');
  });
});

describe('Prefer: example=<name> on streams', () => {
  it("streams the named in-stream error event by event, with the event's trace id as X-Trace-Id", async () => {
    const expected = example('createGuardedChatCompletion', 'in_stream_error', 'text/event-stream') as string;
    const res = await post(GUARDED_PATH, { ...ASK, stream: true }, { Prefer: 'example=in_stream_error' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-trace-id')).toBe(/"trace_id":"(trc_[^"]+)"/.exec(expected)![1]);
    const received = await chunks(res);
    expect(received.map((c) => c.text).join('')).toBe(expected);
    expect(received.length).toBeGreaterThanOrEqual(3);
    // Paced, not sent at once: two pauses between three events (half of that, for a loaded machine).
    expect(received.at(-1)!.at - received[0].at).toBeGreaterThanOrEqual(STREAM_DELAY_MS);
  });

  it('streams the in-stream rate limit and the content-filter end on Accept: text/event-stream, with code=200', async () => {
    for (const name of ['in_stream_rate_limit', 'content_filter_end']) {
      const res = await post(GUARDED_PATH, ASK, { Accept: 'text/event-stream', Prefer: `code=200, example=${name}` });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(example('createGuardedChatCompletion', name, 'text/event-stream'));
    }
  });

  it('streams a named Responses failure as named events', async () => {
    const res = await post(RESPONSES_PATH, { auto_routing: true, input: 'Define grace.', stream: true }, { Prefer: 'example=response_failed' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(example('createResponse', 'response_failed', 'text/event-stream'));
  });

  it('streams the `ok` example by default', async () => {
    const res = await post(GUARDED_PATH, { ...ASK, stream: true });
    expect(await res.text()).toBe(example('createGuardedChatCompletion', 'ok', 'text/event-stream'));
  });

  it('answers a named error example of a stream request as JSON, before any stream', async () => {
    const res = await post(GUARDED_PATH, { ...ASK, stream: true }, { Prefer: 'example=quota_exceeded' });
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual(example('createGuardedChatCompletion', 'quota_exceeded'));
  });

  it('still validates the request before streaming a named example', async () => {
    const res = await post(GUARDED_PATH, { auto_routing: true, stream: true }, { Prefer: 'example=in_stream_error' });
    expect(res.status).toBe(422);
    expect((await res.json()).trace_id).toMatch(TRACE_ID);
  });
});
