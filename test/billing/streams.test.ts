// Streams are billed for what was produced: a finished stream, a stream its client left,
// and a stream resumed on another upstream (each upstream recorded for its own part, the
// caller charged for one answer).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { createOrg, pricedCatalog, settled, type TestOrg } from './support.js';

const ANSWER = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ') + '.';

let primary: FakeUpstream;
let fallback: FakeUpstream;
let platform: TestPlatform;
beforeAll(async () => {
  primary = await startFakeOpenAI({ answer: ANSWER });
  fallback = await startFakeOpenAI({ answer: ANSWER });
  const catalog = pricedCatalog({
    providers: [
      { id: 'primary', type: 'openai', base_url: `${primary.url}/v1` },
      { id: 'fallback', type: 'openai', base_url: `${fallback.url}/v1`, prefix: 'vllm' },
    ],
    deployments: [
      { id: 'd-primary', provider: 'primary', model: 'primary-model', order: 1 },
      { id: 'd-fallback', provider: 'fallback', model: 'fallback-model', order: 2 },
    ],
    models: [
      { id: 'remote', family: 'openai', context_window: 10_000, max_output_tokens: 1_000, pricing: { input_per_1m: 1000, output_per_1m: 2000 }, deployments: ['d-primary', 'd-fallback'] },
    ],
    // Generous: a busy test machine must not look like an idle upstream (the cut fault closes the connection).
    timeouts: { connect_ms: 1_000, first_token_ms: 5_000, idle_ms: 5_000 },
    // v1 streams are not resumed: a cut ends them with an error event.
    failover: { max_attempts: 3, retry_after_cap_ms: 0, resume_streams: true, routes: { createChatCompletionV1: { resume_streams: false } } },
  });
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog });
});
afterAll(async () => {
  await platform?.close();
  await Promise.all([primary?.close(), fallback?.close()]);
});
beforeEach(() => {
  primary.faults.clear();
  fallback.faults.clear();
  primary.config.chunkIntervalMs = 0;
});

const prisma = () => platform.services.database.prisma;
const body = { model: 'remote', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'Count the words.' }] };
const stream = (org: TestOrg, signal?: AbortSignal, headers: Record<string, string> = {}) =>
  platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(body), signal, headers });

async function prepaid(label: string): Promise<TestOrg> {
  const org = await createOrg(platform, label);
  await platform.services.billing.accounts.setMode(org.id, 'prepaid');
  await platform.services.billing.accounts.credit.add(org.id, 10_000_000n, 'test');
  return org;
}

describe('stream billing', () => {
  it('bills a finished stream at the usage the upstream reported', async () => {
    const org = await prepaid('stream');
    const res = await stream(org);
    expect(res.status).toBe(200);
    await res.text();
    await settled(platform, org.id);
    const records = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(records).toHaveLength(1);
    expect(records[0].outputTokens).toBeGreaterThanOrEqual(60);
    expect(await platform.services.billing.accounts.credit.balance(org.id)).toBe(10_000_000n - records[0].billedMicros);
  });

  it('bills a stream its client left for what was produced, and releases the hold', async () => {
    const org = await prepaid('left');
    primary.config.chunkIntervalMs = 20;
    const controller = new AbortController();
    const res = await stream(org, controller.signal);
    const reader = res.body!.getReader();
    let received = '';
    while (received.split('data: ').length < 8) received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await reader.cancel().catch(() => undefined);
    await settled(platform, org.id);
    const [record] = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(record.outputTokens).toBeGreaterThan(0);
    expect(record.outputTokens).toBeLessThan(60);
    expect(record.billedMicros).toBeGreaterThan(0n);
    const account = await platform.services.billing.accounts.account(org.id);
    expect(account.reservedMicros).toBe(0n);
    expect(account.balanceMicros).toBe(10_000_000n - record.billedMicros);
  });

  it('bills a stream cut without resume for what was produced (an error event ends it)', async () => {
    const org = await prepaid('cut');
    primary.config.chunkIntervalMs = 5;
    primary.faults.push({ type: 'cut', afterChunks: 10 });
    const res = await platform.api('/ai/v1/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"finish_reason":"error"');
    await settled(platform, org.id);
    const records = await prisma().usageRecord.findMany({ where: { organizationId: org.id } });
    expect(records.map((r) => r.provider)).toEqual(['primary']);
    const [record] = records;
    expect(record.outputTokens).toBeGreaterThan(0);
    expect(record.outputTokens).toBeLessThan(60);
    expect(record.billedMicros).toBe(BigInt(record.inputTokens) * 1_000n + BigInt(record.outputTokens) * 2_000n);
    const account = await platform.services.billing.accounts.account(org.id);
    expect(account.reservedMicros).toBe(0n);
    expect(account.balanceMicros).toBe(10_000_000n - record.billedMicros);
  });

  it('records each upstream of a resumed stream for its part, and charges the caller for one answer', async () => {
    const org = await prepaid('resume');
    primary.config.chunkIntervalMs = 5;
    primary.faults.push({ type: 'cut', afterChunks: 10 });
    const res = await stream(org);
    const text = await res.text();
    expect(text).toContain('"finish_reason":"stop"');
    await settled(platform, org.id);
    const records = await prisma().usageRecord.findMany({ where: { organizationId: org.id }, orderBy: { createdAt: 'asc' } });
    expect(records.map((r) => r.provider).sort()).toEqual(['fallback', 'primary']);
    const first = records.find((r) => r.provider === 'primary')!;
    const second = records.find((r) => r.provider === 'fallback')!;
    // The fallback's upstream cost includes the prefix it was given; the caller pays only its completion.
    expect(second.costMicros).toBeGreaterThan(second.billedMicros);
    expect(second.billedMicros).toBe(BigInt(second.outputTokens) * 2_000n);
    expect(first.billedMicros).toBe(first.costMicros);
    const billed = first.billedMicros + second.billedMicros;
    expect(await platform.services.billing.accounts.credit.balance(org.id)).toBe(10_000_000n - billed);
    // One answer: the prompt once plus the whole answer's tokens, give or take the estimate of the cut part.
    expect(first.outputTokens + second.outputTokens).toBeGreaterThanOrEqual(55);
    expect(first.outputTokens + second.outputTokens).toBeLessThanOrEqual(70);
  });

  it('refuses a concurrent duplicate of a stream with the same Idempotency-Key (409), so it is produced and billed once', async () => {
    const org = await prepaid('dupstream');
    primary.config.chunkIntervalMs = 10;
    const key = randomUUID();
    const first = await stream(org, undefined, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    const answer = first.text();
    const duplicate = await stream(org, undefined, { 'idempotency-key': key });
    expect(duplicate.status).toBe(409);
    expect((await duplicate.json()).error.name).toBe('IDEMPOTENCY_KEY_IN_USE');
    expect(await answer).toContain('"finish_reason":"stop"');
    await settled(platform, org.id);
    expect(await prisma().usageRecord.count({ where: { organizationId: org.id } })).toBe(1);
    // A stream cannot be replayed: once it ended the key is free, and a retry runs again.
    await vi.waitFor(async () => expect((await stream(org, undefined, { 'idempotency-key': key })).status).toBe(200));
  });
});
