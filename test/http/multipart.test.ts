// Uploads cut short: a multipart body that ends inside a file part is a 400, the server
// keeps serving (the fuzzer's truncated upload once crashed it: multer leaves a placeholder
// without a path for the part in flight), and no spooled file is left behind. File names
// are cleaned where the upload is received: what the answer, the item and the log show.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILE_NAME_MAX_BYTES } from '../../server/http/file-name.js';
import { logLinesOf, startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
let spool: string;
beforeAll(async () => {
  spool = mkdtempSync(join(tmpdir(), 'multipart-test-'));
  platform = await startTestPlatform({ uploadTmpDir: spool });
});
afterAll(async () => {
  await platform?.close();
  rmSync(spool, { recursive: true, force: true });
});

const cutInsideAFile = (publisherId: string) =>
  [
    '--cut',
    'Content-Disposition: form-data; name="publisher_id"',
    '',
    publisherId,
    '--cut',
    'Content-Disposition: form-data; name="files"; filename="notes.txt"',
    'Content-Type: text/plain',
    '',
    'Grace and pea',
  ].join('\r\n');

describe('multipart uploads cut short', () => {
  it('answer 400, leave no spooled file and keep the server up', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await platform.api('/ingestion/v2/files', {
        method: 'POST',
        headers: { 'content-type': 'multipart/form-data; boundary=cut' },
        body: cutInsideAFile(platform.bootstrap!.publisherId),
      });
      expect(res.status).toBe(400);
      expect((await res.json()).detail).toMatch(/Malformed multipart body/);
    }
    // Files are removed when the answer closes: give that a moment.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readdirSync(spool)).toEqual([]);
    expect((await platform.mgmt('/api/v1/health')).status).toBe(200);
  });
});

/**
 * A form of `publisher_id` and one text file per name, each name in RFC 5987's `filename*`
 * (percent-encoded UTF-8): a header line cannot carry control characters raw.
 */
function formWithNames(publisherId: string, names: string[]): string {
  const parts = [`--names\r\nContent-Disposition: form-data; name="publisher_id"\r\n\r\n${publisherId}\r\n`];
  names.forEach((name, i) => {
    parts.push(`--names\r\nContent-Disposition: form-data; name="files"; filename*=UTF-8''${encodeURIComponent(name)}\r\nContent-Type: text/plain\r\n\r\nFile ${i} of many names: grace.\r\n`);
  });
  return `${parts.join('')}--names--\r\n`;
}

describe('file names of uploads', () => {
  const override = 'invoice\u202Efdp.exe';
  const controls = 'notes\u0007\u001b\u0085\u2066.md';
  const long = `${'n'.repeat(5_000)}.txt`;

  it('are stored, answered and logged without control or bidirectional characters, cut to 255 bytes with the extension', async () => {
    const res = await platform.api('/ingestion/v2/files', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=names' },
      body: formWithNames(platform.bootstrap!.publisherId, [override, controls, long]),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const { files } = await res.clone().json();
    const cutLong = `${'n'.repeat(FILE_NAME_MAX_BYTES - 4)}.txt`;
    expect(files.map((f: { file_name: string }) => f.file_name)).toEqual(['invoicefdp.exe', 'notes.md', cutLong]);
    for (const [i, expected] of ['invoicefdp.exe', 'notes.md', cutLong].entries()) {
      const item = await platform.api(`/engine/v2/items/${files[i].item_id}`);
      expect((await item.json()).filename).toBe(expected);
    }
    const logged = (await logLinesOf(platform, res)).join('\n');
    expect(logged).not.toMatch(/\u202E|\u2066|\u0007/);
    expect(logged).not.toContain('n'.repeat(FILE_NAME_MAX_BYTES));
  });

  it('are cleaned the same way in a real-time upload', async () => {
    const res = await platform.api('/ingestion/v1/real_time_upload', {
      method: 'POST',
      body: JSON.stringify({ publisher_id: platform.bootstrap!.publisherId, content: 'Rest for the weary, in one document.', filename: `${override}${'x'.repeat(300)}.md` }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const item = await platform.api(`/engine/v2/items/${(await res.json()).item_id}`);
    const { filename } = await item.json();
    expect(filename).toMatch(/^invoicefdp\.exex+\.md$/);
    expect(Buffer.byteLength(filename)).toBe(FILE_NAME_MAX_BYTES);
  });
});
