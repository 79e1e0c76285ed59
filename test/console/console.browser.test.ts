// The operator console end to end in headless Chromium (playwright-core) against a running
// platform with real data: an OpenAI-compatible fake upstream serves the OpenAI models (so
// requests cost money), the Anthropic provider points at a closed port (so its circuits open
// and its requests fail), a document is ingested and one item has failed. The test signs in,
// renders every page from that data, creates a key (secret shown once), signs in with it to
// see a refused scope, revokes it, and checks the console at phone width. Screenshots of each
// page go to CONSOLE_SCREENSHOTS (e.g. docs/console), else to a temporary directory.
// Needs Chromium (`apt-get install -y chromium`; .ci/run installs it): without it the suite
// is skipped saying so, and fails under CI.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { uploadForm } from '../data/ingestion.suite.js';
import { describeWithService } from '../support/services.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { failedItemWithFile } from '../support/content.js';

const CHROMIUM = process.env.TEST_CHROMIUM_PATH || '/usr/bin/chromium';
const SHOTS = process.env.CONSOLE_SCREENSHOTS ? resolve(process.env.CONSOLE_SCREENSHOTS) : mkdtempSync(join(tmpdir(), 'console-shots-'));
const DESKTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };

let upstream: FakeUpstream;
let platform: TestPlatform;
let browser: Browser;
const traces = { ok: '', failed: '', firstFailed: '' };

/** A local port nothing listens on: the "Anthropic" upstream, down for the whole test. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

async function chat(model: string): Promise<string> {
  const res = await platform.api('/ai/v2/chat/completions', { method: 'POST', body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Tell me about the fox.' }] }) });
  await res.arrayBuffer();
  return res.headers.get('x-trace-id')!;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | null | false>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function seedData(): Promise<void> {
  // Prepaid, with credit and a weekly cap: the usage page shows the balance and the cap's meter.
  const org = await platform.services.identity.organizations.findOrganization('default');
  await platform.services.billing.accounts.setMode(org.id, 'prepaid');
  await platform.services.billing.accounts.setWeeklyCap(org.id, 5_000_000n);
  const credit = await platform.mgmt('/api/v1/billing/credit', { method: 'POST', body: JSON.stringify({ amountMicros: 20_000_000, reason: 'console e2e' }) });
  expect(credit.status).toBe(201);
  const capped = await platform.mgmt('/api/v1/keys', {
    method: 'POST',
    body: JSON.stringify({ scopes: ['inference'], label: 'capped agent', limits: { weeklyCapMicros: 2_000_000, allowedModels: ['openai/*'] } }),
  });
  expect(capped.status).toBe(201);
  for (let i = 0; i < 6; i++) traces.ok = await chat(i % 3 === 0 ? 'gloo-openai-gpt-5' : 'gloo-openai-gpt-5-mini');
  await chat('local-chat');
  // The Anthropic upstream is down: these fail, and open its circuit.
  traces.firstFailed = await chat('gloo-anthropic-claude-haiku-4.5');
  for (let i = 0; i < 3; i++) traces.failed = await chat('gloo-anthropic-claude-haiku-4.5');
  await chat(`no-such-model-${randomUUID().slice(0, 6)}`);

  const { prisma } = platform.services.database;
  const publisherId = platform.bootstrap!.publisherId;
  const upload = await platform.api('/ingestion/v2/files', {
    method: 'POST',
    body: uploadForm(publisherId, [{ name: 'river-notes.md', content: '# River notes\n\nThe quiet river bends past the old mill, where herons wait for fish.' }]),
  });
  expect(upload.status).toBeLessThan(300);
  await until('the upload to be ingested', async () => (await prisma.item.count({ where: { publisherId, status: 'COMPLETED' } })) > 0);
  await failedItemWithFile(platform, publisherId, 'scanned-letter.pdf', 'parse: the PDF has no text layer (a scan?)', 'A letter, typed again by hand: the mill opens at dawn.');
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${platform.mgmtUrl}/console`);
  await page.fill('input[name=api-key]', key);
  await page.click('button[type=submit]');
}

/** The card whose heading starts with `title`. */
const section = (page: Page, title: string) => page.locator('section', { has: page.getByRole('heading', { level: 2, name: new RegExp(`^${title}`) }) });

async function open(page: Page, route: string, heading: string): Promise<void> {
  await page.goto(`${platform.mgmtUrl}/console#/${route}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

describeWithService(
  { what: `Chromium at ${CHROMIUM}`, variable: 'TEST_CHROMIUM_PATH', unreachableReason: existsSync(CHROMIUM) ? undefined : 'not installed: apt-get install -y chromium' },
  'the operator console in a headless browser',
  () => {
    beforeAll(async () => {
      mkdirSync(SHOTS, { recursive: true });
      upstream = await startFakeOpenAI({ answer: 'The quick brown fox jumps over the lazy dog near the quiet river bank.' });
      const env = { OPENAI_API_KEY: 'sk-fake', OPENAI_BASE_URL: `${upstream.url}/v1`, ANTHROPIC_API_KEY: 'sk-ant-fake', ANTHROPIC_BASE_URL: `http://127.0.0.1:${await closedPort()}` };
      platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: buildCatalog(defaultConfig(env), 'console e2e', env) });
      await seedData();
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'] });
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      await platform?.close();
      await upstream?.close();
    });

    it('signs in, renders every page from real data, creates a key, refuses a scope, revokes the key', async () => {
      const context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
      const page = await context.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text()));
      page.on('pageerror', (error) => consoleErrors.push(error.message));

      // Sign-in: a wrong key is refused; the admin key opens the overview.
      await signIn(page, 'sk_not_a_real_key');
      await page.getByText('That key was not accepted').waitFor();
      await screenshot(page, 'sign-in');
      await signIn(page, platform.adminKey);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['platform-console.key']);
      expect(await page.evaluate(() => localStorage.length)).toBe(0);
      expect(await context.cookies()).toEqual([]);
      expect(page.url()).not.toContain(platform.adminKey);

      // Overview: charts (Chart.js canvases) and the per-model table from the request log.
      await page.locator('figure.chart canvas').first().waitFor();
      expect(await page.locator('figure.chart canvas').count()).toBe(4);
      const tiles = await page.locator('.tiles').innerText();
      expect(Number(/Requests\s+([\d,]+)/.exec(tiles)![1].replace(',', ''))).toBeGreaterThanOrEqual(12);
      expect(Number(/Errors\s+([\d,]+)/.exec(tiles)![1])).toBeGreaterThanOrEqual(5);
      const perModel = await section(page, 'Per model and provider').innerText();
      expect(perModel).toContain('gloo-openai-gpt-5-mini');
      expect(perModel).toContain('openai');
      expect(tiles).not.toContain('$0.00\n');
      await screenshot(page, 'overview');

      // Models: the catalog and each deployment's circuit; the Anthropic ones are open; polled.
      await open(page, 'models', 'Models');
      const deployments = section(page, 'Deployments');
      await deployments.locator('tr', { hasText: 'anthropic-claude-haiku-4.5' }).getByText('open').waitFor();
      expect(await deployments.locator('tr', { hasText: /^openai-gpt-5-mini/ }).innerText()).toContain('healthy');
      const live = page.locator('p.live');
      const before = await live.innerText();
      await expect.poll(() => live.innerText(), { timeout: 10_000 }).not.toBe(before);
      await screenshot(page, 'models');

      // Keys: create one with billing:read only; its secret is shown once.
      await open(page, 'keys', 'Keys');
      await page.fill('input[name=label]', 'limited viewer');
      await page.check('input[name=scope][value="billing:read"]');
      await page.click('button:has-text("Create key")');
      const secret = (await page.getByTestId('new-key-secret').innerText()).trim();
      expect(secret).toMatch(/^sk_/);
      const row = page.locator('tr', { hasText: 'limited viewer' });
      await row.waitFor();
      expect(await row.innerText()).toContain('billing:read');
      const cappedRow = await page.locator('tr', { hasText: 'capped agent' }).innerText();
      expect(cappedRow).toContain('cap $2.00/week');
      expect(cappedRow).toContain('model openai/*');
      await screenshot(page, 'keys');
      await page.click('button:has-text("I have stored it")');
      expect(await page.getByTestId('new-key-secret').count()).toBe(0);

      // Usage and billing: account, lines per model, CSV export, charts over time.
      await open(page, 'usage', 'Usage & billing');
      await page.getByText('Credit available').waitFor();
      expect(await page.locator('.tiles').innerText()).toMatch(/of \$5\.00 cap/);
      await page.locator('[role=meter]').waitFor();
      const lines = section(page, 'Usage per model');
      await lines.locator('tr', { hasText: 'gloo-openai-gpt-5-mini' }).waitFor();
      await page.locator('figure.chart canvas').first().waitFor();
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Export CSV")')]);
      const csv = readFileSync((await download.path())!, 'utf8');
      expect(csv.split('\r\n')[0]).toBe('model,calls,input_tokens,output_tokens,cost_usd,billed_usd');
      const mini = /^gloo-openai-gpt-5-mini,4,(\d+),(\d+),(\d+\.\d{6}),(\d+\.\d{6})$/m.exec(csv);
      expect(mini, csv).not.toBeNull();
      expect(Number(mini![3])).toBeGreaterThan(0);
      await screenshot(page, 'usage');

      // Ingestion: items per state, a failure with its reason retried, a publisher created.
      await open(page, 'ingestion', 'Ingestion');
      const byState = section(page, 'Items by state');
      await byState.locator('tr', { hasText: platform.bootstrap!.publisherId }).waitFor();
      const failure = page.locator('tr', { hasText: 'scanned-letter.pdf' });
      expect(await failure.innerText()).toContain('no text layer');
      await page.fill('input[name=publisher-name]', 'riverside-press');
      await page.click('button:has-text("Create publisher")');
      await byState.locator('tr', { hasText: 'riverside-press' }).waitFor();
      await screenshot(page, 'ingestion');
      await failure.getByRole('button', { name: 'Retry scanned-letter.pdf' }).click();
      await page.getByText('is queued again').waitFor();

      // Requests: the log with route taken, filtered to errors, found by trace id.
      await open(page, 'requests', 'Requests');
      await page.locator('tr', { hasText: traces.ok }).waitFor();
      expect(await page.locator('tr', { hasText: traces.ok }).innerText()).toMatch(/openai-gpt-5(-mini)?\s+ok/);
      // A failed request still shows what was tried, and with which model and provider.
      const firstFailed = await page.locator('tr', { hasText: traces.firstFailed }).innerText();
      expect(firstFailed).toMatch(/anthropic-claude-haiku-4\.5\s+unavailable/);
      expect(firstFailed).toContain('gloo-anthropic-claude-haiku-4.5\tanthropic');
      expect(firstFailed).toContain('503');
      // Refused at once by the open circuit: no attempt, the model asked for.
      expect(await page.locator('tr', { hasText: traces.failed }).innerText()).toContain('gloo-anthropic-claude-haiku-4.5');
      await page.selectOption('select[name=status]', 'error');
      await page.click('button:has-text("Filter")');
      await expect.poll(() => page.locator('tr', { hasText: traces.ok }).count()).toBe(0);
      await page.locator('tr', { hasText: traces.failed }).waitFor();
      expect(await page.locator('tbody tr', { hasText: ' 200' }).count()).toBe(0);
      await page.selectOption('select[name=status]', '');
      await page.fill('input[name=traceId]', traces.ok);
      await page.click('button:has-text("Filter")');
      await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
      await page.click('button:has-text("Clear")');
      await page.locator('tr', { hasText: traces.failed }).waitFor();
      await screenshot(page, 'requests');

      // A refused scope: the new key holds billing:read only.
      await page.click('button:has-text("Sign out")');
      await signIn(page, secret);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.getByText('Not available with this key').waitFor();
      await open(page, 'keys', 'Keys');
      const refused = await page.locator('.notice.refused').innerText();
      expect(refused).toContain('keys:manage');
      expect(await page.locator('nav a.locked').count()).toBe(5);
      await screenshot(page, 'refused-scope');
      await open(page, 'usage', 'Usage & billing');
      await page.locator('tr', { hasText: 'gloo-openai-gpt-5-mini' }).first().waitFor();

      // Revoke it as the admin; then it no longer signs in.
      await page.click('button:has-text("Sign out")');
      await signIn(page, platform.adminKey);
      await open(page, 'keys', 'Keys');
      const limited = page.locator('tr', { hasText: 'limited viewer' });
      await limited.getByRole('button', { name: /^Revoke / }).click();
      await limited.getByRole('button', { name: 'Confirm revoke' }).click();
      await limited.getByText('revoked').waitFor();
      await page.click('button:has-text("Sign out")');
      await signIn(page, secret);
      await page.getByText('That key was not accepted').waitFor();

      expect(consoleErrors.filter((e) => !e.includes('401'))).toEqual([]);
      await context.close();
    }, 180_000);

    it('is usable at phone width', async () => {
      const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
      const page = await context.newPage();
      await signIn(page, platform.adminKey);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.locator('figure.chart canvas').first().waitFor();
      // Nothing wider than the screen but the tables, which scroll inside their own box.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
      await screenshot(page, 'overview-phone');
      for (const [route, heading] of [['requests', 'Requests'], ['models', 'Models'], ['keys', 'Keys']] as const) {
        await open(page, route, heading);
        await page.locator('tbody tr').first().waitFor();
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
      }
      await open(page, 'models', 'Models');
      await page.locator('tbody tr').first().waitFor();
      await screenshot(page, 'models-phone');
      await context.close();
    }, 120_000);
  },
);
