// Item operations of the data engine, end to end: file record and item views, single and
// multi patch, delete, producer lookup and listing, and that no organization ever reaches
// another's items or publishers.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopes, type Scope } from '../../generated/contract/routes.js';
import type { OperationId } from '../../generated/server/operations.js';
import type { Item, Prisma } from '../../generated/prisma/client.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { MAX_BODY_DEPTH } from '../../server/http/body-depth.js';

let platform: TestPlatform;
/** Organization A is the bootstrap's default organization; B is a second, unrelated one. */
let orgA: { id: string; name: string; publisherId: string; publisherName: string; otherPublisherId: string };
let orgB: { id: string; publisherId: string; key: string };
let readOnlyKey: string;

const TRACE = /^trc_[0-9a-f]{32}$/;
const ALL_SCOPES = Object.keys(scopes) as Scope[];

beforeAll(async () => {
  platform = await startTestPlatform();
  const { identity, database } = platform.services;
  const bootstrap = platform.bootstrap!;
  const defaultOrg = await database.prisma.organization.findUniqueOrThrow({ where: { id: bootstrap.organizationId } });
  const defaultPublisher = await database.prisma.publisher.findUniqueOrThrow({ where: { id: bootstrap.publisherId } });
  const secondPublisher = await identity.organizations.createPublisher(defaultOrg.name, 'a-second-publisher');
  orgA = {
    id: defaultOrg.id,
    name: defaultOrg.name,
    publisherId: defaultPublisher.id,
    publisherName: defaultPublisher.name,
    otherPublisherId: secondPublisher.id,
  };
  const b = await identity.organizations.createOrganization('organization-b');
  const bPublisher = await identity.organizations.createPublisher(b.name, 'publisher-b');
  const bKey = await identity.keys.issue(b.id, { scopes: ALL_SCOPES });
  orgB = { id: b.id, publisherId: bPublisher.id, key: bKey.plaintext };
  readOnlyKey = (await identity.keys.issue(orgA.id, { scopes: ['data:read'] })).plaintext;
});
afterAll(() => platform?.close());

// ----------------------------------------------------------------- helpers

const prisma = () => platform.services.database.prisma;

async function seedItem(publisherId: string, data: Partial<Prisma.ItemUncheckedCreateInput> = {}): Promise<Item> {
  return prisma().item.create({ data: { publisherId, fileName: `${randomUUID()}.md`, ...data } });
}

async function seedChunks(item: Item, count = 2): Promise<void> {
  for (let ordinal = 0; ordinal < count; ordinal++) {
    await prisma().chunk.create({ data: { itemId: item.id, publisherId: item.publisherId, ordinal, content: `Passage ${ordinal} of ${item.fileName}` } });
  }
  await prisma().item.update({ where: { id: item.id }, data: { chunkCount: count } });
}

const reload = (id: string) => prisma().item.findUniqueOrThrow({ where: { id } });

interface Answer {
  status: number;
  body: any;
  text: string;
  /** The path and body sent. */
  request: string;
}

async function call(method: string, path: string, body?: unknown, key?: string): Promise<Answer> {
  const res = await platform.api(path, { method, ...(body !== undefined && { body: JSON.stringify(body) }), ...(key && { key }) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text, request: `${path} ${JSON.stringify(body) ?? ''}` };
}

/** An error answer in the data engine's declared shape: `{detail, trace_id}` and nothing else. */
function expectDetailError(operationId: OperationId, answer: Answer, status: number, detail?: RegExp): void {
  expect(answer.status, answer.text).toBe(status);
  expect(Object.keys(answer.body).sort()).toEqual(['detail', 'trace_id']);
  expect(answer.body.trace_id).toMatch(TRACE);
  if (detail) expect(answer.body.detail).toMatch(detail);
  expect(contractProblems(operationId, status, answer.body)).toEqual([]);
}

const patchItem = (body: unknown, key?: string) => call('PATCH', '/engine/v2/item', body, key);
const patchItems = (publisherId: string, body: unknown, key?: string) => call('PATCH', `/engine/v2/items?publisher_id=${publisherId}`, body, key);
const deleteItems = (body: unknown, key?: string) => call('DELETE', '/engine/v2/items', body, key);
const byProducer = (publisherId: string, body: unknown, key?: string) =>
  call('POST', `/engine/v2/publisher/${publisherId}/items/by-producer`, body, key);

// ----------------------------------------------------------- file record

const FILE_DATA_KEYS = [
  'item_id', 'title', 'file_name', 'type', 'ingestion_source', 'author', 'status', 'chunk_count', 'upload_date',
  'publisher_id', 'publisher_name', 'organization_id', 'organization_name', 'item_subtitle', 'item_image', 'item_url',
  'item_summary', 'item_tags', 'isbn', 'publication_date', 'hosted_url', 'visible_in_search', 'visible_in_chat',
].sort();

describe('GET /engine/v1/files/{item_id} (getFile)', () => {
  it('answers the file record with every key, names joined and publication_date as given', async () => {
    const item = await seedItem(orgA.publisherId, {
      title: 'Sabbath Rest',
      fileName: 'sabbath.pdf',
      type: 'article',
      ingestionSource: 'upload',
      author: ['Jane Doe'],
      status: 'COMPLETED',
      itemTags: ['rest'],
      publicationDate: 'March 2021',
      itemUrl: 'https://example.org/sabbath',
      visibleInChat: false,
    });
    await seedChunks(item, 3);
    const { status, body, text } = await call('GET', `/engine/v1/files/${item.id}`);
    expect(status, text).toBe(200);
    expect(Object.keys(body).sort()).toEqual(FILE_DATA_KEYS);
    expect(body).toMatchObject({
      item_id: item.id,
      title: 'Sabbath Rest',
      file_name: 'sabbath.pdf',
      type: 'article',
      ingestion_source: 'upload',
      author: ['Jane Doe'],
      status: 'COMPLETED',
      chunk_count: 3,
      publisher_id: orgA.publisherId,
      publisher_name: orgA.publisherName,
      organization_id: orgA.id,
      organization_name: orgA.name,
      item_tags: ['rest'],
      publication_date: 'March 2021',
      item_url: 'https://example.org/sabbath',
      item_subtitle: null,
      item_image: null,
      item_summary: null,
      isbn: null,
      hosted_url: null,
      visible_in_search: true,
      visible_in_chat: false,
    });
    expect(new Date(body.upload_date).toISOString()).toBe(body.upload_date);
  });

  it('keeps nullable keys present as null on a bare item', async () => {
    const item = await seedItem(orgA.publisherId, { uploadDate: null });
    const { status, body } = await call('GET', `/engine/v1/files/${item.id}`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(FILE_DATA_KEYS);
    for (const key of ['title', 'type', 'ingestion_source', 'upload_date', 'item_subtitle', 'isbn', 'publication_date', 'hosted_url']) {
      expect(body[key], key).toBeNull();
    }
    expect(body).toMatchObject({ author: [], item_tags: [], chunk_count: 0, status: 'QUEUED' });
  });

  it('answers 404 for an unknown or soft-deleted item', async () => {
    expectDetailError('getFile', await call('GET', `/engine/v1/files/${randomUUID()}`), 404, /not found/);
    const item = await seedItem(orgA.publisherId, { deletedAt: new Date() });
    expectDetailError('getFile', await call('GET', `/engine/v1/files/${item.id}`), 404, /not found/);
  });

  it('rejects an item id that is not a uuid with 422', async () => {
    const answer = await call('GET', '/engine/v1/files/not-a-uuid');
    expect(answer.status).toBe(422);
    expect(contractProblems('getFile', 422, answer.body)).toEqual([]);
  });
});

// ---------------------------------------------------------------- item v2

const ITEM_KEYS = [
  'item_id', 'status', 'updated_at', 'etag', 'item_title', 'item_subtitle', 'filename', 'publication_date', 'type',
  'item_image', 'item_url', 'item_summary', 'item_number', 'item_extra', 'isbn', 'author', 'item_tags', 'evergreen',
  'visible_in_search', 'visible_in_chat',
].sort();

describe('GET /engine/v2/items/{item_id} (getItem)', () => {
  it('answers the item with etag, updated_at and item_extra as a string', async () => {
    const item = await seedItem(orgA.publisherId, {
      title: 'Grace Notes',
      fileName: 'grace.md',
      status: 'EMBEDDING',
      itemNumber: '7',
      itemExtra: { series: 'Advent' },
      evergreen: true,
      author: ['A', 'B'],
    });
    const { status, body, text } = await call('GET', `/engine/v2/items/${item.id}`);
    expect(status, text).toBe(200);
    expect(Object.keys(body).sort()).toEqual(ITEM_KEYS);
    expect(body).toMatchObject({
      item_id: item.id,
      status: 'EMBEDDING',
      etag: item.etag,
      updated_at: item.updatedAt.toISOString(),
      item_title: 'Grace Notes',
      filename: 'grace.md',
      item_number: '7',
      item_extra: '{"series":"Advent"}',
      author: ['A', 'B'],
      item_tags: [],
      evergreen: true,
      visible_in_search: true,
      visible_in_chat: true,
      item_subtitle: null,
    });
  });

  it('answers 404 for an unknown or soft-deleted item', async () => {
    expectDetailError('getItem', await call('GET', `/engine/v2/items/${randomUUID()}`), 404);
    const item = await seedItem(orgA.publisherId, { deletedAt: new Date() });
    expectDetailError('getItem', await call('GET', `/engine/v2/items/${item.id}`), 404);
  });
});

// -------------------------------------------------------------- patch one

describe('PATCH /engine/v2/item (patchItem)', () => {
  it('sets present fields, clears null ones, leaves the rest, and gives a new etag and updated_at', async () => {
    const item = await seedItem(orgA.publisherId, { title: 'Old', subtitle: 'Sub', itemTags: ['a'], isbn: '123', itemExtra: 'x' });
    const answer = await patchItem({
      publisher_id: orgA.publisherId,
      item_id: item.id,
      item_title: 'New',
      item_subtitle: null,
      item_tags: ['b', 'c'],
      item_extra: null,
      evergreen: true,
      visible_in_search: false,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ success: true, message: `Item ${item.id} updated.` });
    const after = await reload(item.id);
    expect(after).toMatchObject({ title: 'New', subtitle: null, itemTags: ['b', 'c'], itemExtra: null, isbn: '123', evergreen: true, visibleInSearch: false });
    expect(after.etag).not.toBe(item.etag);
    expect(after.updatedAt.getTime()).toBeGreaterThan(item.updatedAt.getTime());
    const view = await call('GET', `/engine/v2/items/${item.id}`);
    expect(view.body).toMatchObject({ etag: after.etag, updated_at: after.updatedAt.toISOString(), item_title: 'New' });
  });

  it('clears a list with null', async () => {
    const item = await seedItem(orgA.publisherId, { author: ['X'] });
    expect((await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, author: null })).status).toBe(200);
    expect((await reload(item.id)).author).toEqual([]);
  });

  it('finds the item by producer_id, and item_id wins when both are given', async () => {
    const byProducerItem = await seedItem(orgA.publisherId, { producerId: 'prod-patch-1', title: 'P' });
    const byIdItem = await seedItem(orgA.publisherId, { producerId: 'prod-patch-2', title: 'I' });
    expect((await patchItem({ publisher_id: orgA.publisherId, producer_id: 'prod-patch-1', item_title: 'P2' })).status).toBe(200);
    expect((await reload(byProducerItem.id)).title).toBe('P2');

    const both = await patchItem({ publisher_id: orgA.publisherId, item_id: byIdItem.id, producer_id: 'prod-patch-1', item_title: 'winner' });
    expect(both.status).toBe(200);
    expect((await reload(byIdItem.id)).title).toBe('winner');
    expect((await reload(byProducerItem.id)).title).toBe('P2');
  });

  it('keeps the etag when nothing changes', async () => {
    const item = await seedItem(orgA.publisherId, { title: 'Same' });
    const answer = await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, item_title: 'Same' });
    expect(answer.status).toBe(200);
    expect(answer.body.message).toMatch(/unchanged/);
    expect((await reload(item.id)).etag).toBe(item.etag);
  });

  it('answers 400 without item_id and producer_id, and for an unknown publisher', async () => {
    expectDetailError('patchItem', await patchItem({ publisher_id: orgA.publisherId, item_title: 'x' }), 400, /item_id or producer_id/);
    const item = await seedItem(orgA.publisherId);
    expectDetailError('patchItem', await patchItem({ publisher_id: randomUUID(), item_id: item.id, item_title: 'x' }), 400, /Publisher .* not found/);
  });

  it('answers 422 without publisher_id', async () => {
    const answer = await patchItem({ item_id: randomUUID(), item_title: 'x' });
    expect(answer.status).toBe(422);
    expect(contractProblems('patchItem', 422, answer.body)).toEqual([]);
  });

  it('answers 403 when the item belongs to another publisher of the organization', async () => {
    const item = await seedItem(orgA.otherPublisherId, { title: 'Elsewhere' });
    expectDetailError('patchItem', await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, item_title: 'x' }), 403);
    expect((await reload(item.id)).title).toBe('Elsewhere');
  });

  it('answers 404 for an unknown item id, an unknown producer id and a soft-deleted item', async () => {
    expectDetailError('patchItem', await patchItem({ publisher_id: orgA.publisherId, item_id: randomUUID(), item_title: 'x' }), 404);
    expectDetailError('patchItem', await patchItem({ publisher_id: orgA.publisherId, producer_id: 'nobody', item_title: 'x' }), 404);
    const gone = await seedItem(orgA.publisherId, { deletedAt: new Date() });
    expectDetailError('patchItem', await patchItem({ publisher_id: orgA.publisherId, item_id: gone.id, item_title: 'x' }), 404);
  });

  it('answers 403 for a key without data:write', async () => {
    const item = await seedItem(orgA.publisherId);
    const answer = await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, item_title: 'x' }, readOnlyKey);
    expect(answer.status).toBe(403);
    expect(answer.body.trace_id).toMatch(TRACE);
    expect(contractProblems('patchItem', 403, answer.body)).toEqual([]);
  });

  it('updates an item with chunks, and the visibility its chunks carry for retrieval', async () => {
    const item = await seedItem(orgA.publisherId);
    await seedChunks(item, 2);
    expect((await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, visible_in_chat: false })).status).toBe(200);
    expect((await reload(item.id)).visibleInChat).toBe(false);
    const chunks = await prisma().chunk.findMany({ where: { itemId: item.id } });
    expect(chunks.map((c) => [c.publisherId, c.visibleInChat, c.visibleInSearch])).toEqual([
      [orgA.publisherId, false, true],
      [orgA.publisherId, false, true],
    ]);
  });

  describe('when the vector-store (chunk) update fails', () => {
    beforeAll(async () => {
      await prisma().$executeRawUnsafe(
        `CREATE FUNCTION fail_chunk_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'vector store down'; END $$`,
      );
      await prisma().$executeRawUnsafe(`CREATE TRIGGER fail_chunk_update BEFORE UPDATE ON chunks FOR EACH ROW EXECUTE FUNCTION fail_chunk_update()`);
    });
    afterAll(async () => {
      await prisma().$executeRawUnsafe('DROP TRIGGER fail_chunk_update ON chunks');
      await prisma().$executeRawUnsafe('DROP FUNCTION fail_chunk_update()');
    });

    it('answers 502 and rolls the item change back', async () => {
      const item = await seedItem(orgA.publisherId, { title: 'Before' });
      await seedChunks(item, 2);
      const before = await reload(item.id);
      const answer = await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, item_title: 'After', visible_in_search: false });
      expectDetailError('patchItem', answer, 502, /vector store/);
      const after = await reload(item.id);
      expect(after).toMatchObject({ title: 'Before', visibleInSearch: true, etag: before.etag });
      expect(after.updatedAt.getTime()).toBe(before.updatedAt.getTime());
    });

    it('still patches an item without chunks', async () => {
      const item = await seedItem(orgA.publisherId, { title: 'Before' });
      expect((await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, item_title: 'After' })).status).toBe(200);
      expect((await reload(item.id)).title).toBe('After');
    });

    it('reports the failure per item in a multi-item patch', async () => {
      const tag = `vs-${randomUUID()}`;
      const indexed = await seedItem(orgA.publisherId, { itemTags: [tag] });
      await seedChunks(indexed, 1);
      const plain = await seedItem(orgA.publisherId, { itemTags: [tag] });
      const answer = await patchItems(orgA.publisherId, { filter: { tags: [tag] }, ops: [{ op: 'replace', field: 'evergreen', value: true }] });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ success: false, total_matched: 2, total_patched: 1, total_failed: 1 });
      const failed = answer.body.results.find((r: any) => r.item_id === indexed.id);
      expect(failed).toEqual({ item_id: indexed.id, success: false, error: expect.stringMatching(/vector store/), etag: null, updated_at: null });
      expect((await reload(indexed.id)).evergreen).toBe(false);
      expect((await reload(plain.id)).evergreen).toBe(true);
    });
  });
});

// ------------------------------------------------------------- patch many

describe('PATCH /engine/v2/items (patchItems)', () => {
  it('answers 400 when ops is missing or empty', async () => {
    expectDetailError('patchItems', await patchItems(orgA.publisherId, { filter: {} }), 400, /ops/);
    expectDetailError('patchItems', await patchItems(orgA.publisherId, { ops: [] }), 400, /ops/);
  });

  it('answers 422 for an op that cannot apply to its field', async () => {
    for (const op of [
      { op: 'append', field: 'evergreen', value: true },
      { op: 'remove', field: 'item_title', value: 'x' },
      { op: 'replace', field: 'etag', value: 'x' },
      { op: 'replace', field: 'evergreen', value: 'yes' },
      { op: 'replace', field: 'item_tags', value: [1] },
      { op: 'append', field: 'item_tags' },
    ]) {
      const answer = await patchItems(orgA.publisherId, { ops: [op] });
      expect(answer.status, JSON.stringify(op)).toBe(422);
      expect(answer.body.detail[0].loc.slice(0, 3)).toEqual(['body', 'ops', '0']);
      expect(contractProblems('patchItems', 422, answer.body)).toEqual([]);
    }
  });

  it('answers a deeply nested value (20,000 levels) with a JSON 422, never the framework\'s HTML page', async () => {
    const nested = '['.repeat(20_000) + ']'.repeat(20_000);
    for (const field of ['item_tags', 'evergreen', 'item_title']) {
      const res = await platform.api(`/engine/v2/items?publisher_id=${orgA.publisherId}`, {
        method: 'PATCH',
        body: `{"ops":[{"op":"replace","field":"${field}","value":${nested}}]}`,
      });
      const text = await res.text();
      expect(res.headers.get('content-type'), text.slice(0, 200)).toMatch(/json/);
      const body = JSON.parse(text);
      expect(res.status).toBe(422);
      expect(body.trace_id).toMatch(TRACE);
      // Refused at the body-depth bound, before validation, without echoing the value back
      // (rendering it exhausted the stack): the location stops at the bound.
      const [finding] = body.detail;
      expect(finding).toEqual({ loc: expect.any(Array), msg: expect.stringContaining('levels deep'), type: 'too_deep' });
      expect(finding.loc.slice(0, 4)).toEqual(['body', 'ops', '0', 'value']);
      expect(finding.loc.length).toBeLessThanOrEqual(MAX_BODY_DEPTH + 1);
      expect(contractProblems('patchItems', 422, body)).toEqual([]);
    }
  });

  it('answers 422 for a limit outside 1..10000', async () => {
    for (const limit of [0, 10001]) {
      const answer = await patchItems(orgA.publisherId, { ops: [{ op: 'replace', field: 'evergreen', value: true }], limit });
      expect(answer.status).toBe(422);
    }
  });

  it('echoes only the filter fields it applies', async () => {
    const filter = JSON.parse(`{"tags":["none-${randomUUID()}"],"__proto__":"text","fuzz_extra":1}`);
    const answer = await patchItems(orgA.publisherId, { filter, ops: [{ op: 'replace', field: 'evergreen', value: true }] });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.filter_applied).toEqual({ tags: filter.tags });
    expect(contractProblems('patchItems', 200, answer.body)).toEqual([]);
  });

  it('answers 400 for an unknown publisher', async () => {
    expectDetailError('patchItems', await patchItems(randomUUID(), { ops: [{ op: 'replace', field: 'evergreen', value: true }] }), 400);
  });

  it('applies replace, append and remove to the matching items and reports each', async () => {
    const tag = `multi-${randomUUID()}`;
    const first = await seedItem(orgA.publisherId, { itemTags: [tag, 'old'], author: ['Ann'], title: 'First' });
    const second = await seedItem(orgA.publisherId, { itemTags: [tag], author: [], title: 'Second' });
    const untouched = await seedItem(orgA.publisherId, { itemTags: ['other'], title: 'Untouched' });
    const elsewhere = await seedItem(orgA.otherPublisherId, { itemTags: [tag], title: 'Elsewhere' });
    const deleted = await seedItem(orgA.publisherId, { itemTags: [tag], deletedAt: new Date() });
    const filter = { tags: [tag] };
    const answer = await patchItems(orgA.publisherId, {
      filter,
      ops: [
        { op: 'append', field: 'item_tags', value: ['new', 'new'] },
        { op: 'remove', field: 'item_tags', value: 'old' },
        { op: 'append', field: 'author', value: 'Bob' },
        { op: 'replace', field: 'item_summary', value: 'Summarised' },
        { op: 'replace', field: 'visible_in_chat', value: false },
      ],
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ success: true, total_matched: 2, total_patched: 2, total_failed: 0, filter_applied: filter });
    expect(answer.body.message).toMatch(/2 of 2/);
    const results = answer.body.results as any[];
    expect(results.map((r) => r.item_id).sort()).toEqual([first.id, second.id].sort());
    for (const result of results) {
      const row = await reload(result.item_id);
      expect(result).toEqual({ item_id: row.id, success: true, error: null, etag: row.etag, updated_at: row.updatedAt.toISOString() });
    }
    expect(await reload(first.id)).toMatchObject({ itemTags: [tag, 'new'], author: ['Ann', 'Bob'], itemSummary: 'Summarised', visibleInChat: false });
    expect(await reload(second.id)).toMatchObject({ itemTags: [tag, 'new'], author: ['Bob'], itemSummary: 'Summarised', visibleInChat: false });
    expect((await reload(first.id)).etag).not.toBe(first.etag);
    for (const other of [untouched, elsewhere, deleted]) expect((await reload(other.id)).etag).toBe(other.etag);
  });

  it('narrows by item_ids, statuses, types, authors, search, flags and dates', async () => {
    const marker = randomUUID();
    const early = new Date('2020-01-01T00:00:00Z');
    const a = await seedItem(orgA.publisherId, { title: `Alpha ${marker}`, status: 'COMPLETED', type: 'book', author: ['Zed'], createdAt: early });
    const b = await seedItem(orgA.publisherId, { fileName: `beta-${marker}.md`, status: 'FAILED', type: 'article', visibleInSearch: false });
    const matchedBy = async (filter: Record<string, unknown>) => {
      const answer = await patchItems(orgA.publisherId, { filter: { search: marker, ...filter }, ops: [{ op: 'replace', field: 'item_number', value: randomUUID() }] });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.filter_applied).toEqual({ search: marker, ...filter });
      return (answer.body.results as any[]).map((r) => r.item_id).sort();
    };
    expect(await matchedBy({})).toEqual([a.id, b.id].sort());
    expect(await matchedBy({ search: marker.toUpperCase() })).toEqual([a.id, b.id].sort());
    expect(await matchedBy({ item_ids: [b.id] })).toEqual([b.id]);
    expect(await matchedBy({ statuses: ['COMPLETED'] })).toEqual([a.id]);
    expect(await matchedBy({ types: ['article'] })).toEqual([b.id]);
    expect(await matchedBy({ authors: ['Zed'] })).toEqual([a.id]);
    expect(await matchedBy({ visible_in_search: false })).toEqual([b.id]);
    expect(await matchedBy({ created_before: '2021-01-01T00:00:00Z' })).toEqual([a.id]);
    expect(await matchedBy({ created_after: '2021-01-01T00:00:00Z' })).toEqual([b.id]);
    expect(await matchedBy({ updated_after: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
  });

  it('answers 422 for a filter date the database cannot hold: a leap second, year 0000', async () => {
    const ops = [{ op: 'replace', field: 'evergreen', value: true }];
    for (const filter of [{ created_after: '2016-12-31T23:59:60Z' }, { updated_before: '0000-01-01T00:00:00Z' }]) {
      const answer = await patchItems(orgA.publisherId, { filter, ops });
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body.trace_id).toMatch(TRACE);
      expect(answer.body.detail[0].loc).toEqual(['body', 'filter', Object.keys(filter)[0]]);
      expect(contractProblems('patchItems', 422, answer.body)).toEqual([]);
    }
  });

  it('searches for %, _ and \\ literally, not as LIKE wildcards', async () => {
    const marker = randomUUID();
    const titles = ['50% off', '500 off', 'a_b', 'axb', 'c\\d', 'cd'];
    const ids = new Map<string, string>();
    for (const title of titles) ids.set(title, (await seedItem(orgA.publisherId, { title: `${marker} ${title}` })).id);
    const ops = [{ op: 'replace', field: 'item_number', value: '1' }];
    for (const [search, title] of [['50%', '50% off'], ['a_b', 'a_b'], ['c\\d', 'c\\d']]) {
      const answer = await patchItems(orgA.publisherId, { filter: { search: `${marker} ${search}` }, ops });
      expect(answer.status, answer.text).toBe(200);
      expect((answer.body.results as any[]).map((r) => r.item_id), search).toEqual([ids.get(title)]);
    }
  });

  it('takes 10000 item_ids, types and statuses in a filter, and answers 422 for one more', async () => {
    const item = await seedItem(orgA.publisherId, { type: 'limit-test' });
    const ops = [{ op: 'replace', field: 'item_number', value: 'max' }];
    const ids = [item.id, ...Array.from({ length: 9999 }, () => randomUUID())];
    const types = Array.from({ length: 10000 }, (_, i) => (i ? `type-${i}` : 'limit-test'));
    const statuses = Array.from({ length: 10000 }, () => item.status);
    const largest = await patchItems(orgA.publisherId, { filter: { item_ids: ids, types, statuses }, ops });
    expect(largest.status, largest.text.slice(0, 500)).toBe(200);
    expect((largest.body.results as any[]).map((r) => r.item_id)).toEqual([item.id]);
    for (const filter of [{ item_ids: [...ids, randomUUID()] }, { types: [...types, 'x'] }, { statuses: [...statuses, item.status] }]) {
      const answer = await patchItems(orgA.publisherId, { filter, ops });
      expect(answer.status, Object.keys(filter)[0]).toBe(422);
      expect(contractProblems('patchItems', 422, answer.body)).toEqual([]);
    }
  });

  it('patches at most limit items, 100 by default, and says when more match', async () => {
    const tag = `limit-${randomUUID()}`;
    await prisma().item.createMany({
      data: Array.from({ length: 101 }, (_, i) => ({ publisherId: orgA.publisherId, fileName: `bulk-${i}.md`, itemTags: [tag] })),
    });
    const ops = [{ op: 'replace', field: 'evergreen', value: true }];
    const limited = await patchItems(orgA.publisherId, { filter: { tags: [tag] }, ops, limit: 2 });
    expect(limited.body).toMatchObject({ total_matched: 2, total_patched: 2 });
    expect(limited.body.message).toMatch(/limit of 2/);
    const byDefault = await patchItems(orgA.publisherId, { filter: { tags: [tag] }, ops });
    expect(byDefault.status).toBe(200);
    expect(byDefault.body).toMatchObject({ total_matched: 100, total_patched: 100, total_failed: 0 });
    expect(await prisma().item.count({ where: { itemTags: { has: tag }, evergreen: true } })).toBe(100);
  });

  it('reports unchanged items as successful with their current etag', async () => {
    const item = await seedItem(orgA.publisherId, { itemTags: ['keep'], title: `same-${randomUUID()}` });
    const answer = await patchItems(orgA.publisherId, { filter: { item_ids: [item.id] }, ops: [{ op: 'append', field: 'item_tags', value: 'keep' }] });
    expect(answer.body.results).toEqual([{ item_id: item.id, success: true, error: null, etag: item.etag, updated_at: item.updatedAt.toISOString() }]);
  });
});

// ------------------------------------------------------------------ delete

describe('DELETE /engine/v2/items (deleteItems)', () => {
  it('answers 400 when item_ids is missing or empty, 422 above 1000', async () => {
    expectDetailError('deleteItems', await deleteItems({}), 400, /item_ids/);
    expectDetailError('deleteItems', await deleteItems({ item_ids: [] }), 400, /item_ids/);
    const tooMany = await deleteItems({ item_ids: Array.from({ length: 1001 }, () => randomUUID()) });
    expect(tooMany.status).toBe(422);
    expect(contractProblems('deleteItems', 422, tooMany.body)).toEqual([]);
  });

  it('takes the largest batch, 1000 item ids', async () => {
    const item = await seedItem(orgA.publisherId);
    const answer = await deleteItems({ item_ids: [item.id, ...Array.from({ length: 999 }, () => randomUUID())] });
    expect(answer.status, answer.text.slice(0, 500)).toBe(200);
    expect(answer.body).toMatchObject({ total_requested: 1000, total_deleted: 1, total_failed: 999 });
  });

  it('soft-deletes, frees producer_id and content_hash, and removes the chunks', async () => {
    const item = await seedItem(orgA.publisherId, { producerId: 'prod-del', contentHash: 'hash-del' });
    await seedChunks(item, 3);
    const answer = await deleteItems({ item_ids: [item.id] });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      success: true,
      mode: 'soft',
      total_requested: 1,
      total_deleted: 1,
      total_failed: 0,
      results: [{ item_id: item.id, success: true, error: null, deleted_from: { database: true, vector_store: true } }],
      message: '1 of 1 items deleted.',
    });
    const row = await reload(item.id);
    expect(row.deletedAt).toBeInstanceOf(Date);
    expect(row).toMatchObject({ producerId: null, contentHash: null });
    expect(await prisma().chunk.count({ where: { itemId: item.id } })).toBe(0);
    expect((await call('GET', `/engine/v2/items/${item.id}`)).status).toBe(404);
    // The same content can come back under the same producer id.
    await expect(seedItem(orgA.publisherId, { producerId: 'prod-del', contentHash: 'hash-del' })).resolves.toBeTruthy();
  });

  it('reports unknown and already deleted items as per-item failures, and deletes the caller\'s', async () => {
    const mine = await seedItem(orgA.publisherId);
    const gone = await seedItem(orgA.publisherId, { deletedAt: new Date() });
    const unknown = randomUUID();
    const answer = await deleteItems({ item_ids: [mine.id, gone.id, unknown, mine.id] });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ success: false, total_requested: 3, total_deleted: 1, total_failed: 2 });
    const byId = Object.fromEntries((answer.body.results as any[]).map((r) => [r.item_id, r]));
    expect(byId[mine.id].success).toBe(true);
    const failure = { success: false, error: 'Item not found', deleted_from: { database: false, vector_store: false } };
    for (const id of [gone.id, unknown]) expect(byId[id]).toEqual({ item_id: id, ...failure });
  });

  it('refuses the whole batch with 403 when an item belongs to another organization (unauthorized delete)', async () => {
    const mine = await seedItem(orgA.publisherId);
    const foreign = await seedItem(orgB.publisherId, { title: 'B secret' });
    const answer = await deleteItems({ item_ids: [mine.id, foreign.id] });
    expectDetailError('deleteItems', answer, 403, /Not authorized/);
    expect(answer.text).not.toContain('B secret');
    expect((await reload(foreign.id)).deletedAt).toBeNull();
    expect((await reload(mine.id)).deletedAt).toBeNull();
  });
});

// ---------------------------------------------------------------- lookups

describe('POST /engine/v2/publisher/{publisher_id}/items/by-producer (getItemsByProducer)', () => {
  it('answers 400 when producer_ids is missing or empty, and for an unknown publisher', async () => {
    expectDetailError('getItemsByProducer', await byProducer(orgA.publisherId, {}), 400, /producer_ids/);
    expectDetailError('getItemsByProducer', await byProducer(orgA.publisherId, { producer_ids: [] }), 400, /producer_ids/);
    expectDetailError('getItemsByProducer', await byProducer(randomUUID(), { producer_ids: ['x'] }), 400, /Publisher/);
  });

  it('answers the publisher\'s live items with those producer ids', async () => {
    const wanted = await seedItem(orgA.publisherId, { producerId: 'lookup-1', title: 'Wanted', status: 'COMPLETED' });
    await seedItem(orgA.publisherId, { producerId: 'lookup-2' });
    await seedItem(orgA.otherPublisherId, { producerId: 'lookup-1' });
    await seedItem(orgA.publisherId, { producerId: null, deletedAt: new Date() });
    const answer = await byProducer(orgA.publisherId, { producer_ids: ['lookup-1', 'lookup-404'] });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ item_id: wanted.id, item_title: 'Wanted', filename: wanted.fileName, status: 'COMPLETED', producer_id: 'lookup-1' }]);
    expect((await byProducer(orgA.publisherId, { producer_ids: ['lookup-404'] })).body).toEqual([]);
  });

  it('takes 10000 producer ids, and answers 422 for one more', async () => {
    const item = await seedItem(orgA.publisherId, { producerId: `max-${randomUUID()}` });
    const producerIds = [item.producerId!, ...Array.from({ length: 9999 }, (_, i) => `absent-${i}`)];
    const largest = await byProducer(orgA.publisherId, { producer_ids: producerIds });
    expect(largest.status, largest.text.slice(0, 500)).toBe(200);
    expect(largest.body.map((i: { item_id: string }) => i.item_id)).toEqual([item.id]);
    const tooMany = await byProducer(orgA.publisherId, { producer_ids: [...producerIds, 'one-more'] });
    expect(tooMany.status).toBe(422);
    expect(contractProblems('getItemsByProducer', 422, tooMany.body)).toEqual([]);
  });
});

describe('GET /engine/v2/publisher/{publisher_id}/items (listPublisherItems)', () => {
  it('lists the publisher\'s live items newest first', async () => {
    const publisher = await platform.services.identity.organizations.createPublisher(orgA.name, `list-${randomUUID()}`);
    const older = await seedItem(publisher.id, { title: 'Older', createdAt: new Date('2024-01-01T00:00:00Z') });
    const newer = await seedItem(publisher.id, { producerId: 'p-new' });
    await seedItem(publisher.id, { deletedAt: new Date() });
    const answer = await call('GET', `/engine/v2/publisher/${publisher.id}/items`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([
      { item_id: newer.id, item_title: null, filename: newer.fileName, status: 'QUEUED', producer_id: 'p-new' },
      { item_id: older.id, item_title: 'Older', filename: older.fileName, status: 'QUEUED', producer_id: null },
    ]);
  });

  it('answers 400 for an unknown publisher', async () => {
    expectDetailError('listPublisherItems', await call('GET', `/engine/v2/publisher/${randomUUID()}/items`), 400, /Publisher .* not found/);
  });
});

// --------------------------------------------------------- ownership matrix

describe('organization B never reaches organization A\'s items or publishers', () => {
  const SECRET = 'Confidential title of organization A';
  let item: Item;
  beforeAll(async () => {
    item = await seedItem(orgA.publisherId, { title: SECRET, producerId: 'a-secret-producer', itemSummary: SECRET });
    await seedChunks(item, 1);
  });

  /**
   * 403 or 404 in the declared `{detail, trace_id}` shape, without any of the item's data
   * (echoing what the caller itself sent is no leak).
   */
  function expectRefused(operationId: OperationId, answer: Answer): void {
    expect([403, 404], answer.text).toContain(answer.status);
    expectDetailError(operationId, answer, answer.status);
    const sent = answer.request;
    for (const fact of [SECRET, item.fileName, orgA.id, orgA.publisherId, 'a-secret-producer']) {
      if (!sent.includes(fact)) expect(answer.text).not.toContain(fact);
    }
  }

  async function expectUntouched(): Promise<void> {
    const row = await reload(item.id);
    expect(row).toMatchObject({ title: SECRET, deletedAt: null, etag: item.etag, evergreen: false });
    expect(await prisma().chunk.count({ where: { itemId: item.id } })).toBe(1);
  }

  it('getFile', async () => {
    expectRefused('getFile', await call('GET', `/engine/v1/files/${item.id}`, undefined, orgB.key));
  });

  it('getItem', async () => {
    expectRefused('getItem', await call('GET', `/engine/v2/items/${item.id}`, undefined, orgB.key));
  });

  it('patchItem, naming A\'s publisher or its own', async () => {
    expectRefused('patchItem', await patchItem({ publisher_id: orgA.publisherId, item_id: item.id, item_title: 'pwned' }, orgB.key));
    expectRefused('patchItem', await patchItem({ publisher_id: orgA.publisherId, producer_id: 'a-secret-producer', evergreen: true }, orgB.key));
    expectRefused('patchItem', await patchItem({ publisher_id: orgB.publisherId, item_id: item.id, item_title: 'pwned' }, orgB.key));
    const byProducerId = await patchItem({ publisher_id: orgB.publisherId, producer_id: 'a-secret-producer', evergreen: true }, orgB.key);
    expectRefused('patchItem', byProducerId);
    await expectUntouched();
  });

  it('patchItems, naming A\'s publisher or filtering its own by A\'s item ids', async () => {
    const ops = [{ op: 'replace', field: 'evergreen', value: true }];
    expectRefused('patchItems', await patchItems(orgA.publisherId, { filter: { item_ids: [item.id] }, ops }, orgB.key));
    const own = await patchItems(orgB.publisherId, { filter: { item_ids: [item.id] }, ops }, orgB.key);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ total_matched: 0, results: [] });
    await expectUntouched();
  });

  it('deleteItems', async () => {
    expectRefused('deleteItems', await deleteItems({ item_ids: [item.id] }, orgB.key));
    await expectUntouched();
  });

  it('getItemsByProducer, naming A\'s publisher or asking its own for A\'s producer id', async () => {
    expectRefused('getItemsByProducer', await byProducer(orgA.publisherId, { producer_ids: ['a-secret-producer'] }, orgB.key));
    const own = await byProducer(orgB.publisherId, { producer_ids: ['a-secret-producer'] }, orgB.key);
    expect(own.status).toBe(200);
    expect(own.body).toEqual([]);
  });

  it('listPublisherItems', async () => {
    expectRefused('listPublisherItems', await call('GET', `/engine/v2/publisher/${orgA.publisherId}/items`, undefined, orgB.key));
  });

  it('while A itself still reads its item', async () => {
    const answer = await call('GET', `/engine/v2/items/${item.id}`);
    expect(answer.status).toBe(200);
    expect(answer.body.item_title).toBe(SECRET);
  });
});
