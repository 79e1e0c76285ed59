// Uploads cut short: a multipart body that ends inside a file part is a 400, the server
// keeps serving (the fuzzer's truncated upload once crashed it: multer leaves a placeholder
// without a path for the part in flight), and no spooled file is left behind.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

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
