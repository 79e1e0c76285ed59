// The ingestion endpoints end to end, run on PGlite (ingestion.test.ts) and on PostgreSQL
// (ingestion.postgres.test.ts): every status rule of ingestFiles and realTimeUpload, every
// accepted format parsed into passages that keep their headings, duplicates, replacement,
// and the POST form of the single-item patch.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scopes, type Scope } from '../../generated/contract/routes.js';
import type { OperationId } from '../../generated/server/operations.js';
import type { Config } from '../../server/config.js';
import { contractProblems } from '../support/contract.js';
import type { TestPlatform } from '../support/platform.js';
import { makeDocx, makePdf } from '../fixtures/documents/make.js';

export type StartPlatform = (overrides?: Partial<Config>) => Promise<TestPlatform>;

const TRACE = /^trc_[0-9a-f]{32}$/;

export interface Upload {
  name: string;
  content: Buffer | string;
  type?: string;
}

export function uploadForm(publisherId: string | null, files: Upload[]): FormData {
  const form = new FormData();
  if (publisherId !== null) form.set('publisher_id', publisherId);
  for (const file of files) form.append('files', new Blob([typeof file.content === 'string' ? file.content : new Uint8Array(file.content)], { type: file.type ?? 'application/octet-stream' }), file.name);
  return form;
}

/** Polls an item until it reaches one of `statuses` (ingestion runs in the background). */
export async function waitForStatus(platform: TestPlatform, itemId: string, statuses = ['COMPLETED', 'FAILED'], timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const item = await platform.services.database.prisma.item.findUniqueOrThrow({ where: { id: itemId } });
    if (statuses.includes(item.status)) return item.status;
    if (Date.now() > deadline) throw new Error(`item ${itemId} still ${item.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function ingestionSuite(start: StartPlatform): void {
  let platform: TestPlatform;
  let small: TestPlatform;
  let publisherId: string;
  let otherPublisherId: string;
  let foreignPublisherId: string;

  const spool = mkdtempSync(join(tmpdir(), 'ingestion-spool-'));

  beforeAll(async () => {
    platform = await start({ uploadTmpDir: spool });
    // Only its limits are tested: it ingests nothing (its uploads stay queued).
    small = await start({ uploadFileLimit: 64 * 1024, uploadMaxFiles: 2, ingestionWorkers: 0 });
    const { identity } = platform.services;
    const organization = await identity.organizations.createOrganization('ingesting-org');
    publisherId = (await identity.organizations.createPublisher(organization.name, 'ingesting-press')).id;
    otherPublisherId = (await identity.organizations.createPublisher(organization.name, 'ingesting-other')).id;
    const foreign = await identity.organizations.createOrganization('foreign-org');
    foreignPublisherId = (await identity.organizations.createPublisher(foreign.name, 'foreign-press')).id;
    key = (await identity.keys.issue(organization.id, { scopes: Object.keys(scopes) as Scope[] })).plaintext;
  }, 120_000);
  afterAll(async () => {
    await small?.close();
    await platform?.close();
    rmSync(spool, { recursive: true, force: true });
  });

  let key: string;
  const prisma = () => platform.services.database.prisma;

  async function upload(files: Upload[], query = '', target = platform, publisher: string | null = publisherId) {
    const res = await target.api(`/ingestion/v2/files${query}`, { method: 'POST', body: uploadForm(publisher, files), key });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
  }

  async function postJson(path: string, body: unknown) {
    const res = await platform.api(path, { method: 'POST', body: JSON.stringify(body), key });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
  }

  function expectError(operationId: OperationId, answer: { status: number; body: any; text: string }, status: number, detail?: RegExp) {
    expect(answer.status, answer.text).toBe(status);
    expect(answer.body.trace_id).toMatch(TRACE);
    if (detail) expect(answer.body.detail).toMatch(detail);
    expect(contractProblems(operationId, status, answer.body)).toEqual([]);
  }

  const chunksOf = (itemId: string) => prisma().chunk.findMany({ where: { itemId }, orderBy: { ordinal: 'asc' } });

  it('ingests .txt, .md, .html, .pdf and .docx: ids in `ingesting`, names beside them, passages with their headings', async () => {
    const files: Upload[] = [
      { name: 'notes.txt', content: 'Plain notes about sabbath rest.\n\nA second paragraph on quiet mornings.', type: 'text/plain' },
      { name: 'grace.md', content: '# Grace\n\nGrace is a gift, not a wage.\n\n## Practice\n\nReceive it daily.', type: 'text/markdown' },
      { name: 'page.html', content: '<!doctype html><html><head><title>Hospitality</title></head><body><h1>Welcome</h1><p>Open the door to strangers.</p><script>track()</script></body></html>' },
      { name: 'essay.pdf', content: makePdf(['Lament gives grief words.', 'The psalms teach it.'], 'On Lament'), type: 'application/pdf' },
      { name: 'chapter.docx', content: await makeDocx([{ heading: 1, text: 'Forgiveness' }, { text: 'Forgiveness releases a debt.' }, { heading: 2, text: 'Cost' }, { text: 'It costs the forgiver.' }]) },
      // Recognized by content, whatever the name says.
      { name: 'scan-export.bin', content: makePdf(['Named wrongly, still a PDF.']) },
    ];
    const answer = await upload(files);
    expect(answer.status, answer.text).toBe(200);
    expect(contractProblems('ingestFiles', 200, answer.body)).toEqual([]);
    expect(answer.body).toMatchObject({ success: true, duplicates: [], message: '6 files queued for ingestion, 0 duplicates skipped.' });
    expect(answer.body.ingesting).toHaveLength(6);
    expect(answer.body.files.map((f: { file_name: string }) => f.file_name)).toEqual(files.map((f) => f.name));
    expect(answer.body.files.map((f: { item_id: string }) => f.item_id)).toEqual(answer.body.ingesting);

    const [txt, md, html, pdf, docx, misnamed] = answer.body.ingesting as string[];
    for (const id of answer.body.ingesting) expect(await waitForStatus(platform, id)).toBe('COMPLETED');

    expect((await chunksOf(txt!)).map((c) => c.content).join('\n\n')).toContain('A second paragraph on quiet mornings.');
    expect((await chunksOf(md!)).map((c) => c.content)).toEqual(['Grace\n\nGrace is a gift, not a wage.', 'Grace › Practice\n\nReceive it daily.']);
    const htmlChunks = (await chunksOf(html!)).map((c) => c.content).join('\n');
    expect(htmlChunks).toContain('Welcome\n\nOpen the door to strangers.');
    expect(htmlChunks).not.toContain('track()');
    expect((await chunksOf(pdf!)).map((c) => c.content).join('\n')).toContain('Lament gives grief words.');
    expect((await chunksOf(docx!)).map((c) => c.content)).toEqual(['Forgiveness\n\nForgiveness releases a debt.', 'Forgiveness › Cost\n\nIt costs the forgiver.']);
    expect((await chunksOf(misnamed!)).map((c) => c.content).join('\n')).toContain('Named wrongly, still a PDF.');

    // The item record: file name, status, chunk count, and the document's own title.
    const items = await Promise.all([md, pdf, html].map((id) => platform.api(`/engine/v2/items/${id}`, { key }).then((r) => r.json())));
    expect(items.map((i: any) => [i.filename, i.status, i.item_title])).toEqual([
      ['grace.md', 'COMPLETED', 'Grace'],
      ['essay.pdf', 'COMPLETED', 'On Lament'],
      ['page.html', 'COMPLETED', 'Hospitality'],
    ]);
    const file = await (await platform.api(`/engine/v1/files/${docx}`, { key })).json();
    expect(file).toMatchObject({ file_name: 'chapter.docx', status: 'COMPLETED', chunk_count: 2, ingestion_source: 'upload' });
    // Passages are stored in the embedding space the chunk index names, nowhere else.
    const models = await prisma().chunk.findMany({ where: { itemId: { in: answer.body.ingesting } }, distinct: ['embeddingModel'], select: { embeddingModel: true } });
    expect(models).toEqual([{ embeddingModel: 'local-embedding' }]);
  });

  it('reports duplicate content within a publisher as a 200 with `duplicates`, never 409', async () => {
    const content = 'Duplicate detection is by content hash within one publisher.';
    const first = await upload([{ name: 'original.txt', content }]);
    expect(first.status, first.text).toBe(200);
    const again = await upload([
      { name: 'copy.txt', content },
      { name: 'fresh.txt', content: 'Something new.' },
      { name: 'fresh-again.txt', content: 'Something new.' },
    ]);
    expect(again.status, again.text).toBe(200);
    expect(contractProblems('ingestFiles', 200, again.body)).toEqual([]);
    expect(again.body.duplicates).toEqual(['copy.txt', 'fresh-again.txt']);
    expect(again.body.ingesting).toHaveLength(1);
    expect(again.body.files).toEqual([
      { file_name: 'copy.txt', item_id: first.body.ingesting[0], duplicate: true },
      { file_name: 'fresh.txt', item_id: again.body.ingesting[0], duplicate: false },
      { file_name: 'fresh-again.txt', item_id: again.body.ingesting[0], duplicate: true },
    ]);
    expect(again.body.message).toBe('1 file queued for ingestion, 2 duplicates skipped.');
    // Another publisher of the same organization holds its own copy.
    const elsewhere = await upload([{ name: 'copy.txt', content }], '', platform, otherPublisherId);
    expect(elsewhere.body).toMatchObject({ ingesting: [expect.any(String)], duplicates: [] });
  });

  it('answers 400 for an unknown publisher and 403 for another organization\'s', async () => {
    expectError('ingestFiles', await upload([{ name: 'a.txt', content: 'x' }], '', platform, '00000000-0000-4000-8000-000000000000'), 400, /not found/);
    expectError('ingestFiles', await upload([{ name: 'a.txt', content: 'x' }], '', platform, foreignPublisherId), 403, /not in your organization/);
    expect(await prisma().item.count({ where: { publisherId: foreignPublisherId } })).toBe(0);
  });

  it('a FAILED item does not hold its content: the same bytes upload again, as a new item or with update=', async () => {
    const content = 'Uploaded while the embedder was down; every attempt failed.';
    const first = await upload([{ name: 'unlucky.txt', content }]);
    const failedId = first.body.ingesting[0];
    expect(await waitForStatus(platform, failedId)).toBe('COMPLETED');
    // As a run-out of attempts leaves it (the queue suite tests how it gets there).
    await prisma().item.update({ where: { id: failedId }, data: { status: 'FAILED', failureReason: 'The embedding provider is temporarily unavailable.' } });
    const again = await upload([{ name: 'unlucky.txt', content }]);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ duplicates: [], ingesting: [expect.not.stringMatching(failedId)] });
    expect(await waitForStatus(platform, again.body.ingesting[0])).toBe('COMPLETED');
    // Now the new item holds the bytes: a third upload is its duplicate.
    expect((await upload([{ name: 'unlucky.txt', content }])).body.files).toEqual([{ file_name: 'unlucky.txt', item_id: again.body.ingesting[0], duplicate: true }]);

    const retried = 'A document retried in place with update=.';
    const second = await upload([{ name: 'retry.txt', content: retried }]);
    const secondId = second.body.ingesting[0];
    expect(await waitForStatus(platform, secondId)).toBe('COMPLETED');
    await prisma().item.update({ where: { id: secondId }, data: { status: 'FAILED' } });
    const inPlace = await upload([{ name: 'retry.txt', content: retried }], `?update=${secondId}`);
    expect(inPlace.body).toMatchObject({ ingesting: [secondId], duplicates: [] });
    expect(await waitForStatus(platform, secondId)).toBe('COMPLETED');
  });

  it('producer_id takes exactly one file (400 otherwise) and is recorded; a taken one is 400 (spec 7.1: no 409 for ingestion)', async () => {
    expectError('ingestFiles', await upload([{ name: 'a.txt', content: 'one' }, { name: 'b.txt', content: 'two' }], '?producer_id=p-1'), 400, /producer_id names one file/);
    const one = await upload([{ name: 'a.txt', content: 'produced content' }], '?producer_id=p-1');
    expect(one.status, one.text).toBe(200);
    expect(await prisma().item.findUniqueOrThrow({ where: { id: one.body.ingesting[0] } })).toMatchObject({ producerId: 'p-1' });
    expectError('ingestFiles', await upload([{ name: 'b.txt', content: 'other content' }], '?producer_id=p-1'), 400, /already used/);
  });

  it('refuses a file it cannot read with 400 naming it, and stores nothing of the batch', async () => {
    const before = await prisma().item.count();
    expectError('ingestFiles', await upload([{ name: 'ok.txt', content: 'fine' }, { name: 'blob.txt', content: Buffer.from([0, 159, 146, 150, 0, 1]) }]), 400, /blob\.txt is neither text/);
    expectError('ingestFiles', await upload([{ name: 'fake.pdf', content: 'just text pretending' }]), 400, /fake\.pdf is not a valid PDF/);
    expectError('ingestFiles', await upload([{ name: 'image.png', content: Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex') }]), 400, /image\/png/);
    expectError('ingestFiles', await upload([{ name: 'empty.txt', content: '' }]), 400, /empty/);
    // A valid signature is not enough: the file must open as what it says it is.
    const brokenPdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(2000, 7)]);
    expectError('ingestFiles', await upload([{ name: 'ok.txt', content: 'fine too' }, { name: 'broken.pdf', content: brokenPdf }]), 400, /broken\.pdf could not be read as a PDF/);
    const docx = await makeDocx([{ text: 'A Word file cut short in transfer.' }]);
    expectError('ingestFiles', await upload([{ name: 'cut.docx', content: docx.subarray(0, Math.floor(docx.length * 0.8)) }]), 400, /cut\.docx could not be read as a Word document/);
    expect(await prisma().item.count()).toBe(before);
  });

  it('a PDF that opens but has no text (a scan) is accepted, then FAILED with the reason', async () => {
    const answer = await upload([{ name: 'scan.pdf', content: makePdf([], 'A scanned page') }]);
    expect(answer.status, answer.text).toBe(200);
    const itemId = answer.body.ingesting[0];
    expect(await waitForStatus(platform, itemId)).toBe('FAILED');
    expect((await prisma().item.findUniqueOrThrow({ where: { id: itemId } })).failureReason).toMatch(/scan\.pdf contains no text/);
  });

  it('spools file parts to disk, hashed on the way, and removes them once answered', async () => {
    const content = 'Spooled to a temporary file, never held whole in memory.';
    const answer = await upload([{ name: 'spooled.txt', content }]);
    expect(answer.status, answer.text).toBe(200);
    const item = await prisma().item.findUniqueOrThrow({ where: { id: answer.body.ingesting[0] } });
    expect(item.contentHash).toBe(createHash('sha256').update(content).digest('hex'));
    // Removed when the answer is sent: wait for the close event to run.
    for (let i = 0; readdirSync(spool).length > 0 && i < 100; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readdirSync(spool)).toEqual([]);
    // Also after a refused request.
    expect((await upload([{ name: 'fake.pdf', content: 'not a pdf' }])).status).toBe(400);
    for (let i = 0; readdirSync(spool).length > 0 && i < 100; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readdirSync(spool)).toEqual([]);
  });

  it('answers 413 past the configured file size or file count', async () => {
    const smallPublisher = await small.services.identity.organizations.createPublisher((await small.services.database.prisma.organization.findFirstOrThrow()).name, 'small');
    const big = await small.api('/ingestion/v2/files', { method: 'POST', body: uploadForm(smallPublisher.id, [{ name: 'big.txt', content: 'x'.repeat(64 * 1024 + 1) }]) });
    expect(big.status).toBe(413);
    const many = await small.api('/ingestion/v2/files', {
      method: 'POST',
      body: uploadForm(smallPublisher.id, [1, 2, 3].map((n) => ({ name: `${n}.txt`, content: `file ${n}` }))),
    });
    expect(many.status).toBe(413);
    expect(contractProblems('ingestFiles', 413, await many.json())).toEqual([]);
    const fits = await small.api('/ingestion/v2/files', { method: 'POST', body: uploadForm(smallPublisher.id, [{ name: 'fits.txt', content: 'x'.repeat(64 * 1024) }]) });
    expect(fits.status).toBe(200);
  });

  it('answers 413 past the form field limits (50 fields, 1 MiB a value) and 400 for an overlong field name', async () => {
    const send = async (form: FormData) => {
      const res = await small.api('/ingestion/v2/files', { method: 'POST', body: form });
      const text = await res.text();
      return { status: res.status, body: JSON.parse(text), text };
    };
    const withFields = (fields: [string, string][]) => {
      const form = uploadForm(publisherId, [{ name: 'a.txt', content: 'fields' }]);
      for (const [name, value] of fields) form.append(name, value);
      return form;
    };
    // publisher_id is one field: 49 more make 50, the limit; one more is over it.
    const fifty = Array.from({ length: 49 }, (_, i): [string, string] => [`extra_${i}`, 'x']);
    expectError('ingestFiles', await send(withFields(fifty)), 400, /not found/); // parsed: the publisher is the other platform's
    expectError('ingestFiles', await send(withFields([...fifty, ['one_too_many', 'x']])), 413, /at most 50 form fields/);
    expectError('ingestFiles', await send(withFields([['note', 'x'.repeat(1024 * 1024 + 1)]])), 413, /note\) may be at most 1048576 bytes/);
    expectError('ingestFiles', await send(withFields([['n'.repeat(101), 'x']])), 400, /field name may be at most 100 bytes/);
  });

  it('replaces an item\'s content with `update`: same item, new passages; unknown item 404, another publisher\'s 403', async () => {
    const first = await upload([{ name: 'v1.md', content: '# Edition one\n\nThe first wording of the essay.' }]);
    const itemId = first.body.ingesting[0];
    expect(await waitForStatus(platform, itemId)).toBe('COMPLETED');
    const replaced = await upload([{ name: 'v2.md', content: '# Edition two\n\nA revised wording, entirely new.' }], `?update=${itemId}`);
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.ingesting).toEqual([itemId]);
    expect(await waitForStatus(platform, itemId)).toBe('COMPLETED');
    expect((await chunksOf(itemId)).map((c) => c.content)).toEqual(['Edition two\n\nA revised wording, entirely new.']);
    expect(await prisma().item.findUniqueOrThrow({ where: { id: itemId } })).toMatchObject({ fileName: 'v2.md', chunkCount: 1 });
    // The same bytes again change nothing.
    expect((await upload([{ name: 'v2.md', content: '# Edition two\n\nA revised wording, entirely new.' }], `?update=${itemId}`)).body.duplicates).toEqual(['v2.md']);

    expectError('ingestFiles', await upload([{ name: 'x.md', content: 'x' }], '?update=00000000-0000-4000-8000-000000000000'), 404);
    expectError('ingestFiles', await upload([{ name: 'x.md', content: 'x y' }], `?update=${itemId}`, platform, otherPublisherId), 403);
    expectError('ingestFiles', await upload([{ name: 'a.md', content: 'a' }, { name: 'b.md', content: 'b' }], `?update=${itemId}`), 400);
  });

  it('real_time_upload: the samples\' JSON document is indexed before the answer', async () => {
    const document = {
      content: '# Sabbath\n\nRest is received before it is achieved.\n\n## Practice\n\nKeep one day unhurried.',
      publisherId,
      item_title: 'Sabbath Practice',
      author: ['Automated Ingestion'],
      publication_date: '2026-11-23',
      type: 'Article',
      pub_type: 'technical',
      item_tags: ['automated', 'ingestion'],
      evergreen: true,
      drm: ['aspen', 'kallm'],
    };
    const answer = await postJson('/ingestion/v1/real_time_upload', document);
    expect(answer.status, answer.text).toBe(200);
    expect(contractProblems('realTimeUpload', 200, answer.body)).toEqual([]);
    expect(answer.body).toMatchObject({ success: true, status: 'COMPLETED', chunk_count: 2, duplicate: false });
    const item = await prisma().item.findUniqueOrThrow({ where: { id: answer.body.item_id } });
    expect(item).toMatchObject({ status: 'COMPLETED', title: 'Sabbath Practice', author: ['Automated Ingestion'], itemTags: ['automated', 'ingestion'], evergreen: true, type: 'Article', chunkCount: 2 });
    expect((await chunksOf(item.id)).map((c) => c.content)).toEqual(['Sabbath\n\nRest is received before it is achieved.', 'Sabbath › Practice\n\nKeep one day unhurried.']);
    // Nothing is left in the queue: the job is done and its file dropped.
    expect(await prisma().ingestionJob.findMany({ where: { itemId: item.id }, select: { status: true, attempts: true } })).toEqual([{ status: 'DONE', attempts: 1 }]);
    expect(await prisma().ingestionJobPart.count({ where: { job: { itemId: item.id } } })).toBe(0);

    const again = await postJson('/ingestion/v1/real_time_upload', { ...document, publisher_id: publisherId, publisherId: undefined });
    expect(again.body).toMatchObject({ success: true, duplicate: true, item_id: item.id, status: 'COMPLETED' });

    expectError('realTimeUpload', await postJson('/ingestion/v1/real_time_upload', { content: 'x' }), 400, /publisherId/);
    expectError('realTimeUpload', await postJson('/ingestion/v1/real_time_upload', { content: 'x', publisherId: foreignPublisherId }), 403);
    expectError('realTimeUpload', await postJson('/ingestion/v1/real_time_upload', { content: 'x', publisherId: '00000000-0000-4000-8000-000000000000' }), 400);
    // A refused document leaves nothing behind: the same post is refused again (not a
    // duplicate of a FAILED item), and its producer_id stays free for the corrected one.
    for (let n = 0; n < 2; n++) {
      expectError('realTimeUpload', await postJson('/ingestion/v1/real_time_upload', { content: '   \n  ', publisherId, producer_id: 'rt-blank' }), 400, /no text/);
    }
    expect(await postJson('/ingestion/v1/real_time_upload', { content: 'Corrected.', publisherId, producer_id: 'rt-blank' })).toMatchObject({ status: 200 });
  });

  it('POST /engine/v2/item is the single-item patch, as the samples send it', async () => {
    const answer = await postJson('/ingestion/v1/real_time_upload', { content: 'Metadata is patched after upload.', publisherId, item_title: 'Before' });
    const patched = await postJson('/engine/v2/item', { publisher_id: publisherId, item_id: answer.body.item_id, item_title: 'After', item_tags: ['patched'] });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toEqual({ success: true, message: `Item ${answer.body.item_id} updated.` });
    expect(await prisma().item.findUniqueOrThrow({ where: { id: answer.body.item_id } })).toMatchObject({ title: 'After', itemTags: ['patched'] });
    expectError('postItem', await postJson('/engine/v2/item', { publisher_id: foreignPublisherId, item_id: answer.body.item_id, item_title: 'x' }), 403);
    expectError('postItem', await postJson('/engine/v2/item', { publisher_id: publisherId, item_id: '00000000-0000-4000-8000-000000000000', item_title: 'x' }), 404);
  });
}
