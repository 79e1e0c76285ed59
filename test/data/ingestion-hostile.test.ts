// Files that cannot hurt the platform (issue 28): each hostile file below is uploaded to a
// server on an on-disk PGlite, and must be answered at once, end FAILED with a reason naming
// the limit it broke, leave the API answering while it is parsed, keep the process's RSS
// under a stated bound, and not be taken again when a new server opens the same data. The
// files are generated here at a size CI holds: the limits make that possible (a 30,000-page
// PDF is refused at its page count, a zip bomb a few MB into inflating, deep HTML at its
// 513th level). The real latency figures are the bench's (`npm run bench:data`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopes, type Scope } from '../../generated/contract/routes.js';
import { loadConfig, type Config } from '../../server/config.js';
import { makeManyPagePdf, makeNestedHtml, makeZipBomb } from '../fixtures/documents/hostile.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { uploadForm, waitForStatus, type Upload } from './ingestion.suite.js';

const MB = 1024 * 1024;
/** The parse thread's heap cap in this test. */
const WORKER_MEMORY_MB = 256;
/**
 * RSS may grow this much over its level before the upload, at most: one parse thread at its
 * cap and its code, with room for the test's own allocations. Without the limits these files
 * took the server to 4.5-7 GB.
 */
const RSS_GROWTH_BOUND_MB = 2 * WORKER_MEMORY_MB + 256;
/** A cheap call must keep answering; the bound is generous (a shared 2-core CI), the figure is logged. */
const CHEAP_CALL_P99_BOUND_MS = 1_000;
/** Long enough for the 30,000-page PDF to be opened and refused at its page count (~3 s here), far shorter than the slow file needs. */
const BUDGET_MS = 8_000;

const defaults = loadConfig({});
const config: Partial<Config> = {
  logLevel: 'warn',
  ingestWorkerMemoryMb: WORKER_MEMORY_MB,
  ingestJobBudgetMs: BUDGET_MS,
  ingestionMaxAttempts: 2,
  ingestionRetryBaseMs: 0,
  ingestLimits: { ...defaults.ingestLimits, maxInflatedBytes: 8 * MB },
};

interface Outcome {
  uploadMs: number;
  status: string;
  reason: string | null;
  attempts: number;
  cheapCalls: number;
  cheapP99Ms: number;
  rssGrowthMB: number;
}

describe('hostile files', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ingestion-hostile-'));
  let platform: TestPlatform;
  let key: string;
  let adminKey: string;
  let publisherId: string;
  const failed = new Map<string, number>();

  beforeAll(async () => {
    platform = await startTestPlatform({ ...config, dataDir });
    adminKey = platform.adminKey;
    const { organizations, keys } = platform.services.identity;
    const organization = await organizations.createOrganization('hostile-org');
    publisherId = (await organizations.createPublisher(organization.name, 'hostile-press')).id;
    key = (await keys.issue(organization.id, { scopes: Object.keys(scopes) as Scope[] })).plaintext;
    // A first, ordinary file: what a server does once (a route's first use, the parse thread's start) is not timed below.
    const res = await platform.api('/ingestion/v2/files', { method: 'POST', body: uploadForm(publisherId, [{ name: 'warm.md', content: '# Warm\n\nAn ordinary file.' }]), key });
    expect(await waitForStatus(platform, ((await res.json()) as { ingesting: string[] }).ingesting[0]!)).toBe('COMPLETED');
  }, 120_000);
  afterAll(async () => {
    await platform?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Uploads `file`, then calls GET /ai/v2/models every 20 ms and samples RSS until the item ends. */
  async function ingest(file: Upload): Promise<Outcome> {
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 25);
    try {
      const started = performance.now();
      const res = await platform.api('/ingestion/v2/files', { method: 'POST', body: uploadForm(publisherId, [file]), key });
      const uploadMs = performance.now() - started;
      const body = (await res.json()) as { ingesting: string[] };
      expect(res.status, JSON.stringify(body)).toBe(200);
      const itemId = body.ingesting[0]!;
      let done = false;
      const latencies: number[] = [];
      const caller = (async () => {
        while (!done) {
          const t = performance.now();
          const models = await platform.api('/ai/v2/models', { key });
          await models.arrayBuffer();
          expect(models.status).toBe(200);
          latencies.push(performance.now() - t);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const status = await waitForStatus(platform, itemId, ['COMPLETED', 'FAILED'], 120_000);
      done = true;
      await caller;
      const item = await platform.services.database.prisma.item.findUniqueOrThrow({ where: { id: itemId } });
      const job = await platform.services.database.prisma.ingestionJob.findFirstOrThrow({ where: { itemId } });
      if (status === 'FAILED') failed.set(job.id, job.attempts);
      latencies.sort((a, b) => a - b);
      const outcome = {
        uploadMs,
        status,
        reason: item.failureReason,
        attempts: job.attempts,
        cheapCalls: latencies.length,
        cheapP99Ms: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0,
        rssGrowthMB: (rssPeak - rssBefore) / MB,
      };
      console.log(`${file.name}: ${JSON.stringify({ ...outcome, uploadMs: Math.round(uploadMs), cheapP99Ms: Math.round(outcome.cheapP99Ms), rssGrowthMB: Math.round(outcome.rssGrowthMB) })}`);
      return outcome;
    } finally {
      clearInterval(sampler);
    }
  }

  function expectContained(outcome: Outcome, reason: RegExp): void {
    // The answer must not wait for the file's parsing or inflating (a zip bomb's upload took
    // 21 s when it did): a bound well above the ~0.1-0.7 s printed here, which a busy 2-core
    // CI machine stretched past 1 s once, and far below what parsing at upload costs.
    expect(outcome.uploadMs).toBeLessThanOrEqual(5_000);
    expect(outcome.status).toBe('FAILED');
    expect(outcome.reason).toMatch(reason);
    expect(outcome.cheapCalls).toBeGreaterThan(0);
    expect(outcome.cheapP99Ms).toBeLessThanOrEqual(CHEAP_CALL_P99_BOUND_MS);
    expect(outcome.rssGrowthMB).toBeLessThan(RSS_GROWTH_BOUND_MB);
  }

  it('a PDF of 30,000 small pages sharing one content stream fails at its page count', async () => {
    const pdf = makeManyPagePdf(30_000);
    expect(pdf.length).toBeLessThan(3 * MB);
    const outcome = await ingest({ name: 'pages.pdf', content: pdf });
    expectContained(outcome, /^limit_exceeded: pages > 2000 \(INGEST_MAX_PAGES\)$/);
    // A content limit is no passing failure: one attempt.
    expect(outcome.attempts).toBe(1);
  }, 180_000);

  it('a .docx zip bomb fails while its main part inflates, a few MB in, never inflated whole', async () => {
    const bomb = await makeZipBomb(256 * MB);
    expect(bomb.length).toBeLessThan(MB);
    const outcome = await ingest({ name: 'bomb.docx', content: bomb });
    expectContained(outcome, /^limit_exceeded: inflated bytes > 8388608 \(INGEST_MAX_INFLATED_BYTES\)$/);
    expect(outcome.attempts).toBe(1);
  }, 180_000);

  it('HTML of 200,000 nested <div>s fails at its nesting depth before any tree is built', async () => {
    const outcome = await ingest({ name: 'deep.html', content: makeNestedHtml(200_000) });
    expectContained(outcome, /^limit_exceeded: HTML nesting depth > 512 \(INGEST_MAX_HTML_DEPTH\)$/);
    expect(outcome.attempts).toBe(1);
  }, 180_000);

  it('a file within every content limit but over its time budget: the thread is terminated, each attempt counted, then FAILED', async () => {
    // 1,990 pages (under the page limit) of 400 lines each: ~40 s of text extraction here.
    const outcome = await ingest({ name: 'slow.pdf', content: makeManyPagePdf(1_990, 400) });
    expectContained(outcome, new RegExp(`^limit_exceeded: parse time > ${BUDGET_MS} ms \\(INGEST_JOB_BUDGET_MS\\)$`));
    expect(outcome.attempts).toBe(config.ingestionMaxAttempts);
  }, 180_000);

  it('a new server on the same data takes none of the failed jobs again, and their stored files are gone', async () => {
    expect(failed.size).toBe(4);
    await platform.close();
    platform = await startTestPlatform({ ...config, dataDir }, {}, { adminKey });
    // Longer than the worker's poll (1 s): it would have claimed a job it could take.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const { prisma } = platform.services.database;
    for (const [id, attempts] of failed) {
      const job = await prisma.ingestionJob.findUniqueOrThrow({ where: { id } });
      expect({ status: job.status, attempts: job.attempts }).toEqual({ status: 'FAILED', attempts });
      expect(await prisma.ingestionJobPart.count({ where: { jobId: id } })).toBe(0);
    }
    expect((await platform.api('/ai/v2/models', { key })).status).toBe(200);
  }, 120_000);
});
