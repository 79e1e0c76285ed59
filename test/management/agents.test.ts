// Agents through the management API: CRUD in the data/meta envelope, validation, versions,
// and cursor pagination that stays stable while agents are being added.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

const send = (path: string, method: string, body?: object) =>
  platform.mgmt(path, { method, body: body ? JSON.stringify(body) : undefined });

async function create(name: string, extra: object = {}) {
  const res = await send('/api/v1/agents', 'POST', { name, ...extra });
  expect(res.status).toBe(201);
  return (await res.json()).data;
}

describe('agents', () => {
  it('are created, read, updated (version +1) and deleted', async () => {
    const agent = await create('Sermon helper', {
      description: 'Drafts outlines',
      tags: ['preaching'],
      model: { mode: 'model_family', model_family: 'anthropic' },
      instructions: 'Be brief.',
      tradition: 'catholic',
    });
    expect(agent).toMatchObject({ name: 'Sermon helper', version: 1, status: 'active', tradition: 'catholic', tags: ['preaching'] });
    expect(agent.createdAt).toBeGreaterThan(Date.now() - 60_000);

    const got = await (await send(`/api/v1/agents/${agent.id}`, 'GET')).json();
    expect(got.data).toEqual(agent);

    const updated = await send(`/api/v1/agents/${agent.id}`, 'PATCH', { status: 'inactive', tradition: null });
    expect(updated.status).toBe(200);
    const u = (await updated.json()).data;
    expect(u).toMatchObject({ status: 'inactive', tradition: null, version: 2, name: 'Sermon helper' });
    expect(u.updatedAt).toBeGreaterThanOrEqual(agent.updatedAt);

    const deleted = await send(`/api/v1/agents/${agent.id}`, 'DELETE');
    expect((await deleted.json()).data).toEqual({ deleted: true, id: agent.id });
    const gone = await send(`/api/v1/agents/${agent.id}`, 'GET');
    expect(gone.status).toBe(404);
    const body = await gone.json();
    expect(contractProblems('getAgent', 404, body)).toEqual([]);
  });

  it('keep only the declared fields of a model choice, and answer only declared fields', async () => {
    const agent = await create('Extra', { model: { mode: 'auto_routing', constructor: -1, note: 'x' } });
    expect(agent.model).toEqual({ mode: 'auto_routing' });
    const updated = await send(`/api/v1/agents/${agent.id}`, 'PATCH', { model: { mode: 'model_family', model_family: 'local', debug: true } });
    const body = await updated.json();
    expect(body.data.model).toEqual({ mode: 'model_family', model_family: 'local' });
    expect(contractProblems('updateAgent', 200, body)).toEqual([]);
  });

  it('defaults to auto-routing and rejects inconsistent model choices with 422', async () => {
    expect((await create('Defaults')).model).toEqual({ mode: 'auto_routing' });
    const res = await send('/api/v1/agents', 'POST', { name: 'Broken', model: { mode: 'model' } });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.error.message).toContain('needs `model`');
    expect(body.error.details).toEqual([expect.objectContaining({ loc: ['body', 'model'], type: 'value_error' })]);
    expect(body.meta).toEqual({ requestId: body.trace_id, hasMore: false, nextCursor: null });
    expect(contractProblems('createAgent', 422, body)).toEqual([]);
    const missingName = await send('/api/v1/agents', 'POST', { description: 'no name' });
    expect(missingName.status).toBe(422);
    const missing = await missingName.json();
    expect(missing.error.details).toEqual([{ loc: ['body', 'name'], msg: 'Field required', type: 'missing', input: null }]);
    expect(contractProblems('createAgent', 422, missing)).toEqual([]);
  });

  it('are listed with limit and cursor, stable while new agents are added', async () => {
    const originals = new Set<string>();
    for (let i = 0; i < 12; i++) originals.add((await create(`page-agent-${i}`)).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Response = await send(`/api/v1/agents?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, 'GET');
      const body = await res.json();
      expect(body.data.length).toBeLessThanOrEqual(5);
      seen.push(...body.data.map((a: { id: string }) => a.id));
      cursor = body.meta.nextCursor;
      // Inserts between pages land before the first page (newest first) and must not
      // shift the pages still to come.
      await create(`concurrent-${pages++}`);
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of originals) expect(seen).toContain(id);
  });

  it('answer concurrent updates and deletes of one agent with 200 or 404, never 500', async () => {
    const agent = await create('contended');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 ? send(`/api/v1/agents/${agent.id}`, 'DELETE') : send(`/api/v1/agents/${agent.id}`, 'PATCH', { name: `n${i}` }),
      ),
    );
    for (const res of answers) expect([200, 404]).toContain(res.status);
  });

  it('validate limit and cursor', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=ten']) {
      const res = await send(`/api/v1/agents?${query}`, 'GET');
      expect(res.status, query).toBe(422);
    }
    const forged = Buffer.from('2020-01-01T00:00:00Z|x').toString('base64url');
    // Dates JavaScript reads but PostgreSQL cannot store: the database must never see them.
    const outOfRange = ['0000-01-01T00:00:00.000Z', '-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z'].map((date) =>
      Buffer.from(`${date}|${randomUUID()}`).toString('base64url'),
    );
    for (const cursor of ['not-a-cursor', forged, ...outOfRange]) {
      const bad = await send(`/api/v1/agents?cursor=${cursor}`, 'GET');
      expect(bad.status, cursor).toBe(422);
      expect(contractProblems('listAgents', 422, await bad.json())).toEqual([]);
    }
  });
});
