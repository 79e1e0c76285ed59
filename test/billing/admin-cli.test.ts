// (Each CLI run opens the database: slow on a loaded machine, hence the generous timeout.)
// The operator CLI's billing commands, on an embedded database, and their effect on a server
// started on it afterwards.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform } from '../support/platform.js';

const run = promisify(execFile);
const PLANS = JSON.stringify({ pro: { organization: { rpm: 600 }, key: { rpm: 100 } } });
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'billing-cli-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

async function admin(...args: string[]) {
  const tsx = join(process.cwd(), 'node_modules', '.bin', 'tsx');
  try {
    const env = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', GATEWAY_CONFIG: '', RATE_LIMIT_PLANS: PLANS };
    const { stdout } = await run(tsx, ['scripts/admin.ts', ...args], { env });
    return { code: 0, out: stdout };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: `${e.stdout}${e.stderr}` };
  }
}

describe('npm run admin: billing', () => {
  it('sets the billing mode, weekly cap and coding plan, and reports usage per model', async () => {
    expect((await admin('create-org', 'acme')).out).toMatch(/^organization acme/);
    const key = /(sk_[A-Za-z0-9_-]{59})/.exec((await admin('create-key', 'acme', '--scopes', 'inference')).out)![1];
    expect((await admin('set-billing', 'acme', 'prepaid')).out).toContain('acme is prepaid: requests need credit (balance $0.00)');
    expect((await admin('set-billing', 'acme', 'metered')).code).not.toBe(0);
    expect((await admin('set-weekly-cap', 'acme', '100')).out).toContain('weekly cap $100.00');
    expect((await admin('set-weekly-cap', 'acme', 'lots')).code).not.toBe(0);
    expect((await admin('set-coding-plan', 'acme', 'code-assist', '20', '--topup')).out).toContain('code-assist plan, $20.00 per month, top-up available');

    expect((await admin('set-rate-limit', 'acme', '--rpm', 'lots')).code).not.toBe(0);
    expect((await admin('set-rate-limit', 'acme', '--rpm', '2', '--tpm', '100000')).out).toContain('acme: 2 requests and 100000 tokens per minute');

    const platform = await startTestPlatform({ dataDir, logLevel: 'silent' }, {}, { adminKey: 'unused' });
    const ask = JSON.stringify({ model: 'local-chat', messages: [{ role: 'user', content: 'hello there' }] });
    try {
      expect((await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key, body: ask })).status).toBe(402);
      expect((await platform.api('/ai/v2/code-assist/chat/completions', { method: 'POST', key, body: ask })).status).toBe(200);
      // The organization's rate limit of 2 requests per minute (the 402 counted too): the third is refused.
      expect((await platform.api('/ai/v2/code-assist/chat/completions', { method: 'POST', key, body: ask })).status).toBe(429);
    } finally {
      await platform.close();
    }
    expect((await admin('set-rate-limit', 'acme')).out).toContain("acme: its plan's limits");
    expect((await admin('set-rate-plan', 'acme', 'pro')).out).toContain('acme: rate-limit plan pro: {"organization":{"rpm":600},"key":{"rpm":100}}');
    expect((await admin('set-rate-plan', 'acme', 'gold')).code).not.toBe(0);
    // Keys made without --scopes cannot credit their own organization.
    const created = (await admin('create-key', 'acme')).out;
    expect(created).toContain('billing:read');
    expect(created).not.toContain('billing:manage');
    const usage = await admin('usage', 'acme', '--since', '2020-01-01');
    expect(usage.out).toMatch(/local-chat\t1\t\d+\t\d+\t\$0\.00\t\$0\.00/);
  }, 300_000);
});
