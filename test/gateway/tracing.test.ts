// OpenTelemetry traces against an in-process OTLP/HTTP receiver (a node:http server taking
// JSON on /v1/traces): a chat completion's request span holds billing, routing, guardrails
// and the upstream attempts, each attempt with the GenAI attributes (models, provider, token
// counts); a failed attempt is a span of its own, marked failed. Without
// OTEL_EXPORTER_OTLP_ENDPOINT nothing of the SDK is loaded.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog } from '../../server/gateway/catalog.js';
import { createTracing } from '../../server/observability/tracing.js';
import { createLogger } from '../../server/logging.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { createOrg } from '../billing/support.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  status?: { code?: number };
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver: every span of every JSON export it was sent. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; paths: string[]; server: Server }> {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, paths, server };
}

const attr = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value && (value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue));
};

// First: the other suite of this file loads the SDK into this worker.
describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('is off, and the SDK is never loaded', async () => {
    const tracing = await createTracing({ otlpEndpoint: undefined, otelServiceName: 'x' }, createLogger('silent'));
    expect(tracing.enabled).toBe(false);
    expect(tracing.request('GET /x', {})).toBeNull();
    // Nothing of @opentelemetry is in this worker's module graph until a traced platform imports it.
    const loaded = Object.keys((await import('node:module')).createRequire(import.meta.url).cache ?? {});
    expect(loaded.filter((path) => path.includes('@opentelemetry/sdk-trace'))).toEqual([]);
  });
});

describe('OpenTelemetry over OTLP/HTTP', () => {
  let upstream: FakeUpstream;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let platform: TestPlatform;
  beforeAll(async () => {
    upstream = await startFakeOpenAI({ answer: 'Rivers run to the sea.' });
    receiver = await otlpReceiver();
    const catalog = buildCatalog(
      {
        providers: [
          { id: 'fake', type: 'openai', base_url: `${upstream.url}/v1` },
          { id: 'down', type: 'openai', base_url: 'http://127.0.0.1:9/v1' },
        ],
        deployments: [
          { id: 'd-down', provider: 'down', model: 'down-model' },
          { id: 'd-fake', provider: 'fake', model: 'fake-model', order: 2 },
        ],
        models: [{ id: 'traced', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments: ['d-down', 'd-fake'] }],
        routing: { tiers: { tier_1: ['traced'], tier_2: ['traced'], tier_3: ['traced'] } },
        circuit: { probe_interval_ms: 0 },
      },
      'tracing test',
      {},
    );
    platform = await startTestPlatform({ logLevel: 'silent', otlpEndpoint: receiver.url }, { catalog });
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    await upstream?.close();
    receiver?.server.close();
  });

  it('exports the request with billing, routing, guardrails and each upstream attempt, the attempts with GenAI attributes', async () => {
    const org = await createOrg(platform, 'traced');
    await platform.services.billing.accounts.setWeeklyCap(org.id, 1_000_000_000n); // so the request is held (a billing span)
    const res = await platform.api('/ai/v2/guarded/chat/completions', {
      method: 'POST',
      key: org.key,
      body: JSON.stringify({ model: 'traced', max_tokens: 50, messages: [{ role: 'user', content: 'Where do rivers go?' }] }),
    });
    expect(res.status).toBe(200);
    const answer = await res.json();
    const traceId = res.headers.get('x-trace-id');
    await platform.services.billing.reservations.drain();
    await platform.close(); // exports what is batched

    expect(receiver.paths.every((p) => p.startsWith('/v1/traces application/json'))).toBe(true);
    const root = receiver.spans.find((s) => attr(s, 'gateway.trace_id') === traceId)!;
    expect(root.name).toBe('POST /ai/v2/guarded/chat/completions');
    expect(attr(root, 'http.response.status_code')).toBe(200);
    const children = receiver.spans.filter((s) => s.traceId === root.traceId && s.parentSpanId === root.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['billing.reserve', 'billing.settle', 'chat traced', 'chat traced', 'gateway.route', 'guardrails.input']);
    expect(attr(children.find((s) => s.name === 'gateway.route')!, 'gen_ai.request.model')).toBe('traced');

    const [failed, served] = children.filter((s) => s.name === 'chat traced').sort((a, b) => String(attr(a, 'gateway.deployment')).localeCompare(String(attr(b, 'gateway.deployment'))));
    expect(attr(failed, 'gateway.deployment')).toBe('d-down');
    expect(failed.status?.code).toBe(2); // ERROR
    expect(attr(served, 'gateway.deployment')).toBe('d-fake');
    expect(attr(served, 'gen_ai.operation.name')).toBe('chat');
    expect(attr(served, 'gen_ai.request.model')).toBe('traced');
    expect(attr(served, 'gen_ai.response.model')).toBe('fake-model');
    expect(attr(served, 'gen_ai.provider.name')).toBe('openai');
    expect(attr(served, 'gen_ai.system')).toBe('openai');
    expect(attr(served, 'gen_ai.usage.input_tokens')).toBe(answer.usage.prompt_tokens);
    expect(attr(served, 'gen_ai.usage.output_tokens')).toBe(answer.usage.completion_tokens);
  }, 60_000);
});
