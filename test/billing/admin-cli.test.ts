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
import { ask, INPUT_MICROS, OUTPUT_MICROS, pricedCatalog } from './support.js';

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
  it('sets the billing mode, weekly cap and coding plan, lifts a 402 with add-credit, and reports usage per model at its price', async () => {
    expect((await admin('create-org', 'acme')).out).toMatch(/^organization acme/);
    const key = /(sk_[A-Za-z0-9_-]{59})/.exec((await admin('create-key', 'acme', '--scopes', 'inference')).out)![1];
    expect((await admin('set-billing', 'acme', 'prepaid')).out).toContain('acme is prepaid: requests need credit (balance $0.00)');
    expect((await admin('set-billing', 'acme', 'metered')).code).not.toBe(0);
    expect((await admin('set-weekly-cap', 'acme', '100')).out).toContain('weekly cap $100.00');
    expect((await admin('set-weekly-cap', 'acme', 'lots')).code).not.toBe(0);
    expect((await admin('set-coding-plan', 'acme', 'code-assist', '20', '--topup')).out).toContain('code-assist plan, $20.00 per month, top-up available');

    expect((await admin('set-rate-limit', 'acme', '--rpm', 'lots')).code).not.toBe(0);
    expect((await admin('set-rate-limit', 'acme', '--rpm', '2', '--tpm', '100000')).out).toContain('acme: 2 requests and 100000 tokens per minute');

    // A server on the same data, its catalog priced (PGlite has one owner: the CLI runs while it is stopped).
    const serve = async (requests: (call: (path: string) => Promise<Response>) => Promise<void>) => {
      const platform = await startTestPlatform({ dataDir, logLevel: 'silent' }, { catalog: pricedCatalog() }, { adminKey: 'unused' });
      try {
        await requests((path) => platform.api(path, { method: 'POST', key, body: JSON.stringify(ask('hello there', { max_tokens: 20 })) }));
      } finally {
        await platform.close();
      }
    };
    const answered: { prompt_tokens: number; completion_tokens: number }[] = [];
    const answer = async (res: Response) => {
      expect(res.status).toBe(200);
      answered.push((await res.json()).usage);
    };
    await serve(async (call) => {
      expect((await call('/ai/v2/guarded/chat/completions')).status).toBe(402);
      await answer(await call('/ai/v2/code-assist/chat/completions'));
      // The organization's rate limit of 2 requests per minute (the 402 counted too): the third is refused.
      expect((await call('/ai/v2/code-assist/chat/completions')).status).toBe(429);
    });
    expect((await admin('set-rate-limit', 'acme')).out).toContain("acme: its plan's limits");
    expect((await admin('set-rate-plan', 'acme', 'pro')).out).toContain('acme: rate-limit plan pro: {"organization":{"rpm":600},"key":{"rpm":100}}');
    expect((await admin('set-rate-plan', 'acme', 'gold')).code).not.toBe(0);
    // Keys made without --scopes cannot credit their own organization.
    const created = (await admin('create-key', 'acme')).out;
    expect(created).toContain('billing:read');
    expect(created).not.toContain('billing:manage');

    // Credit lifts the 402.
    expect((await admin('add-credit', 'acme', '5')).out).toContain('added $5.00 to acme; ledger balance $5.00');
    await serve(async (call) => answer(await call('/ai/v2/guarded/chat/completions')));

    // Usage at the catalog's price: the tokens of both answers, and what they cost to the cent.
    const input = answered.reduce((sum, u) => sum + u.prompt_tokens, 0);
    const output = answered.reduce((sum, u) => sum + u.completion_tokens, 0);
    const micros = BigInt(input) * INPUT_MICROS + BigInt(output) * OUTPUT_MICROS;
    const usage = (await admin('usage', 'acme', '--since', '2020-01-01')).out;
    const line = new RegExp(`^priced\\t2\\t${input}\\t${output}\\t(\\$\\d+\\.\\d\\d)\\t(\\$\\d+\\.\\d\\d)$`, 'm').exec(usage);
    expect(line, usage).not.toBeNull();
    const [, cost, billed] = line!;
    expect(cents(cost)).toBeGreaterThan(0);
    expect(Math.abs(cents(cost) * 10_000 - Number(micros))).toBeLessThanOrEqual(5_000);
    expect(billed).toBe(cost);
    expect(usage).toContain(`total billed ${billed}`);
  }, 300_000);
});

/** `$12.34` in cents. */
const cents = (usd: string) => Number(usd.slice(1).replace('.', ''));
