// The management operations behind the console (issue 27): who the caller is, publishers
// (listed with their items per state, created), the request log (written behind, filtered,
// figures over time), usage over time, failed ingestion and its retry; each in the contract,
// refused without its scope, and confined to the caller's organization. Also: a path asked
// of the wrong port names the port that serves it, and a publisher error says how to find one.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope } from '../../generated/contract/routes.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { failedItemWithFile } from '../support/content.js';

let platform: TestPlatform;
let otherOrgKey: string;
beforeAll(async () => {
  platform = await startTestPlatform();
  const { identity } = platform.services;
  const other = await identity.organizations.createOrganization(`other-${randomUUID()}`);
  await identity.organizations.createPublisher(other.name, `other-press-${randomUUID()}`);
  otherOrgKey = (await identity.keys.issue(other.id, { scopes: ['metrics:read', 'billing:read', 'data:read', 'data:write'] })).plaintext;
});
afterAll(() => platform?.close());

async function keyWith(scopes: Scope[]): Promise<string> {
  const org = await platform.services.identity.organizations.findOrganization('default');
  return (await platform.services.identity.keys.issue(org.id, { scopes, label: `only ${scopes.join(' ')}` })).plaintext;
}

async function json(res: Response) {
  return { status: res.status, body: await res.json() };
}

const chat = (model: string) => platform.api('/ai/v2/chat/completions', { method: 'POST', body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }] }) });

describe('getSession', () => {
  it('names the organization, the key and exactly its scopes', async () => {
    const key = await keyWith(['billing:read', 'inference']);
    const { status, body } = await json(await platform.mgmt('/api/v1/session', { key }));
    expect(status).toBe(200);
    expect(contractProblems('getSession', 200, body)).toEqual([]);
    expect(body.data).toMatchObject({ organizationName: 'default', label: 'only billing:read inference', scopes: ['billing:read', 'inference'] });
    expect(body.data.keyPrefix).toMatch(/^sk_/);
  });
});

describe('publishers', () => {
  it('lists the default publisher with its items per state, and creates one', async () => {
    const listed = await json(await platform.mgmt('/api/v1/publishers'));
    expect(listed.status).toBe(200);
    expect(contractProblems('listPublishers', 200, listed.body)).toEqual([]);
    const defaultPublisher = listed.body.data.find((p: { name: string }) => p.name === 'default');
    expect(defaultPublisher.id).toBe(platform.bootstrap!.publisherId);

    const name = `press-${randomUUID().slice(0, 8)}`;
    const created = await json(await platform.mgmt('/api/v1/publishers', { method: 'POST', body: JSON.stringify({ name }) }));
    expect(created.status).toBe(201);
    expect(contractProblems('createPublisher', 201, created.body)).toEqual([]);
    expect(created.body.data).toMatchObject({ name, itemsByStatus: {} });
    await platform.services.database.prisma.item.create({ data: { publisherId: created.body.data.id, fileName: 'a.txt', status: 'COMPLETED', etag: randomUUID() } });
    const again = await json(await platform.mgmt('/api/v1/publishers?limit=100'));
    expect(again.body.data.find((p: { id: string }) => p.id === created.body.data.id).itemsByStatus).toEqual({ COMPLETED: 1 });

    const taken = await json(await platform.mgmt('/api/v1/publishers', { method: 'POST', body: JSON.stringify({ name }) }));
    expect(taken.status).toBe(409);
    expect(contractProblems('createPublisher', 409, taken.body)).toEqual([]);
    expect(taken.body.error.message).toContain('exists already');
  });

  it('are listed only within the caller\'s organization, and need data:read / data:write', async () => {
    const theirs = await json(await platform.mgmt('/api/v1/publishers', { key: otherOrgKey }));
    expect(theirs.body.data.map((p: { name: string }) => p.name)).not.toContain('default');
    const key = await keyWith(['data:read']);
    expect((await platform.mgmt('/api/v1/publishers', { key })).status).toBe(200);
    const refused = await json(await platform.mgmt('/api/v1/publishers', { key, method: 'POST', body: JSON.stringify({ name: 'nope' }) }));
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('data:write');
    expect((await platform.mgmt('/api/v1/publishers', { key: await keyWith(['inference']) })).status).toBe(403);
  });

  it('an unknown publisher\'s error says how to find one', async () => {
    const res = await platform.api('/ingestion/v1/real_time_upload', { method: 'POST', body: JSON.stringify({ publisher_id: randomUUID(), content: 'x' }) });
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toContain('GET /api/v1/publishers on the management port');
    // Missing or malformed, in any operation's error shape.
    const missing = await platform.api('/ingestion/v1/real_time_upload', { method: 'POST', body: JSON.stringify({ content: 'x' }) });
    expect(JSON.stringify(await missing.json())).toContain('GET /api/v1/publishers on the management port');
    const malformed = await platform.api('/engine/v2/publisher/not-a-uuid/items');
    expect(JSON.stringify(await malformed.json())).toContain('GET /api/v1/publishers on the management port');
    const grounded = await platform.api('/ai/v2/grounded/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'local-chat', messages: [{ role: 'user', content: 'hi' }], rag_publisher: `nobody-${randomUUID()}` }),
    });
    expect(JSON.stringify(await grounded.json())).toContain('GET /api/v1/publishers on the management port');
    const failures = await platform.mgmt('/api/v1/ingestion/failures?publisher_id=nope');
    expect(JSON.stringify(await failures.json())).toContain('GET /api/v1/publishers on the management port');
  });
});

describe('a path asked of the wrong port', () => {
  it('is a 404 naming the port that serves it, both ways', async () => {
    const mgmtPort = new URL(platform.mgmtUrl).port;
    const apiPort = new URL(platform.apiUrl).port;
    const health = await platform.api('/api/v1/health');
    expect(health.status).toBe(404);
    const healthBody = await health.json();
    expect(JSON.stringify(healthBody)).toContain(`served on the management port, ${mgmtPort}`);
    expect(healthBody.trace_id).toMatch(/^trc_/);
    const console = await (await platform.api('/console')).text();
    expect(console).toContain(`management port, ${mgmtPort}`);
    const completion = await (await platform.mgmt('/ai/v2/chat/completions', { method: 'POST', body: '{}' })).text();
    expect(completion).toContain(`served on the API port, ${apiPort}`);
    const nowhere = await (await platform.api('/no/such/path')).text();
    expect(nowhere).not.toContain('served on');
  });
});

describe('the request log', () => {
  it('lists each request of the API port with its route, model, tokens and latency; filters; keeps no bodies by default', async () => {
    const ok = await chat('local-chat');
    expect(ok.status).toBe(200);
    const okTrace = ok.headers.get('x-trace-id')!;
    await ok.arrayBuffer();
    const bad = await chat(`no-such-model-${randomUUID()}`);
    expect(bad.status).toBeGreaterThanOrEqual(400);
    const badTrace = bad.headers.get('x-trace-id')!;
    await bad.arrayBuffer();

    // Written behind: the answer is out before the row; the list flushes this process's rows.
    let rows: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && !rows.some((r) => r.traceId === okTrace && r.model !== null); i++) {
      const listed = await json(await platform.mgmt('/api/v1/requests?limit=100'));
      expect(contractProblems('listRequests', 200, listed.body)).toEqual([]);
      rows = listed.body.data;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const row = rows.find((r) => r.traceId === okTrace)!;
    expect(row).toMatchObject({ method: 'POST', path: '/ai/v2/chat/completions', status: 200, model: 'local-chat', provider: 'local', requestBody: null, error: null });
    expect(row.route).toContain('model=local-chat');
    expect(row.outputTokens as number).toBeGreaterThan(0);
    expect(row.latencyMs as number).toBeGreaterThan(0);

    const errors = (await json(await platform.mgmt('/api/v1/requests?status=error&limit=100'))).body.data;
    expect(errors.map((r: { traceId: string }) => r.traceId)).toContain(badTrace);
    expect(errors.map((r: { traceId: string }) => r.traceId)).not.toContain(okTrace);
    const byTrace = (await json(await platform.mgmt(`/api/v1/requests?traceId=${okTrace}`))).body.data;
    expect(byTrace).toHaveLength(1);
    const byModel = (await json(await platform.mgmt('/api/v1/requests?model=local-chat&limit=100'))).body.data;
    expect(byModel.every((r: { model: string }) => r.model === 'local-chat')).toBe(true);

    // Paged newest first without repeats.
    const first = (await json(await platform.mgmt('/api/v1/requests?limit=1'))).body;
    expect(first.meta.hasMore).toBe(true);
    const second = (await json(await platform.mgmt(`/api/v1/requests?limit=1&cursor=${first.meta.nextCursor}`))).body;
    expect(second.data[0].traceId).not.toBe(first.data[0].traceId);

    // Another organization sees none of it; a key without metrics:read is refused.
    const theirs = (await json(await platform.mgmt('/api/v1/requests?limit=100', { key: otherOrgKey }))).body.data;
    expect(theirs.map((r: { traceId: string }) => r.traceId)).not.toContain(okTrace);
    expect((await platform.mgmt('/api/v1/requests', { key: await keyWith(['billing:read']) })).status).toBe(403);

    const stats = await json(await platform.mgmt('/api/v1/requests/stats'));
    expect(stats.status).toBe(200);
    expect(contractProblems('getRequestStats', 200, stats.body)).toEqual([]);
    const total = stats.body.data.buckets.reduce((sum: number, b: { requests: number }) => sum + b.requests, 0);
    const errorCount = stats.body.data.buckets.reduce((sum: number, b: { errors: number }) => sum + b.errors, 0);
    expect(total).toBeGreaterThanOrEqual(2);
    expect(errorCount).toBeGreaterThanOrEqual(1);
    const local = stats.body.data.models.find((m: { model: string }) => m.model === 'local-chat');
    expect(local).toMatchObject({ provider: 'local' });
    expect(local.p95Ms).toBeGreaterThanOrEqual(local.p50Ms);
    const theirStats = (await json(await platform.mgmt('/api/v1/requests/stats', { key: otherOrgKey }))).body.data;
    expect(theirStats.buckets).toEqual([]);
  });

  it('forgets requests older than the retention', async () => {
    const { prisma } = platform.services.database;
    const org = await platform.services.identity.organizations.findOrganization('default');
    const row = { organizationId: org.id, method: 'POST', path: '/ai/v2/chat/completions', status: 200, latencyMs: 1 };
    const retention = platform.services.requestLog.retentionMs;
    expect(retention).toBe(7 * 24 * 3_600_000);
    await prisma.requestLogEntry.createMany({
      data: [
        { ...row, traceId: 'trc_expired', at: new Date(Date.now() - retention - 60_000) },
        { ...row, traceId: 'trc_kept', at: new Date(Date.now() - retention + 60_000) },
      ],
    });
    expect(await platform.services.requestLog.writer.sweep()).toBeGreaterThanOrEqual(1);
    const left = await prisma.requestLogEntry.findMany({ where: { traceId: { in: ['trc_expired', 'trc_kept'] } } });
    expect(left.map((r) => r.traceId)).toEqual(['trc_kept']);
  });

  it('keeps request bodies only when the operator turns that on', async () => {
    const withBodies = await startTestPlatform({ requestLogBodies: true });
    try {
      const res = await withBodies.api('/ai/v2/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'local-chat', messages: [{ role: 'user', content: 'remember me' }] }) });
      const trace = res.headers.get('x-trace-id');
      await res.arrayBuffer();
      let row: { requestBody: string | null } | undefined;
      for (let i = 0; i < 50 && !row; i++) {
        row = (await json(await withBodies.mgmt(`/api/v1/requests?traceId=${trace}`))).body.data[0];
        if (!row) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(row!.requestBody).toContain('remember me');
    } finally {
      await withBodies.close();
    }
  }, 120_000); // starts a platform of its own
});

describe('getUsageSeries', () => {
  it('buckets the organization\'s usage per model and provider', async () => {
    const res = await chat('local-chat');
    await res.arrayBuffer();
    let points: { group: string; calls: number; start: number }[] = [];
    for (let i = 0; i < 50 && !points.some((p) => p.group === 'local-chat'); i++) {
      const series = await json(await platform.mgmt('/api/v1/usage/series?bucket=hour'));
      expect(contractProblems('getUsageSeries', 200, series.body)).toEqual([]);
      points = series.body.data.points;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const point = points.find((p) => p.group === 'local-chat')!;
    expect(point.calls).toBeGreaterThanOrEqual(1);
    expect(point.start % 3_600_000).toBe(0);
    const byProvider = (await json(await platform.mgmt('/api/v1/usage/series?groupBy=provider&bucket=day'))).body.data.points;
    expect(byProvider.map((p: { group: string }) => p.group)).toContain('local');
    expect((await json(await platform.mgmt('/api/v1/usage/series', { key: otherOrgKey }))).body.data.points).toEqual([]);
    expect((await platform.mgmt('/api/v1/usage/series', { key: await keyWith(['metrics:read']) })).status).toBe(403);
    const backwards = await json(await platform.mgmt('/api/v1/usage/series?since=2000&until=1000'));
    expect(backwards.status).toBe(422);
  });
});

describe('ingestion failures', () => {
  it('lists a failed item with its reason, and a retry ingests its held file again', async () => {
    const { prisma } = platform.services.database;
    const publisherId = platform.bootstrap!.publisherId;
    const item = await failedItemWithFile(platform, publisherId, 'notes.txt', 'embedding: upstream unavailable', 'The retried notes are about gardens and rivers.');

    const listed = await json(await platform.mgmt(`/api/v1/ingestion/failures?publisher_id=${publisherId}`));
    expect(listed.status).toBe(200);
    expect(contractProblems('listIngestionFailures', 200, listed.body)).toEqual([]);
    expect(listed.body.data.find((f: { itemId: string }) => f.itemId === item.id)).toMatchObject({
      reason: 'embedding: upstream unavailable', attempts: 1, retryable: true, publisherName: 'default', fileName: 'notes.txt',
    });
    expect((await json(await platform.mgmt('/api/v1/ingestion/failures', { key: otherOrgKey }))).body.data).toEqual([]);

    const retried = await json(await platform.mgmt(`/api/v1/ingestion/items/${item.id}/retry`, { method: 'POST' }));
    expect(retried.status).toBe(202);
    expect(contractProblems('retryIngestion', 202, retried.body)).toEqual([]);
    let status = '';
    for (let i = 0; i < 300 && status !== 'COMPLETED' && status !== 'FAILED'; i++) {
      status = (await prisma.item.findUniqueOrThrow({ where: { id: item.id } })).status;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe('COMPLETED');

    const again = await json(await platform.mgmt(`/api/v1/ingestion/items/${item.id}/retry`, { method: 'POST' }));
    expect(again.status).toBe(409);
    expect(contractProblems('retryIngestion', 409, again.body)).toEqual([]);
    expect((await platform.mgmt(`/api/v1/ingestion/items/${item.id}/retry`, { method: 'POST', key: otherOrgKey })).status).toBe(404);
    expect((await platform.mgmt(`/api/v1/ingestion/items/${item.id}/retry`, { method: 'POST', key: await keyWith(['data:read']) })).status).toBe(403);
  });
});
