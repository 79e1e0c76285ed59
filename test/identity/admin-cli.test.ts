// The operator CLI creates what an operator needs, on the configured database, and its
// keys and OAuth clients work against a server started on that database afterwards.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform } from '../support/platform.js';

const run = promisify(execFile);
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'admin-cli-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

async function admin(...args: string[]) {
  const tsx = join(process.cwd(), 'node_modules', '.bin', 'tsx');
  try {
    const { stdout } = await run(tsx, ['scripts/admin.ts', ...args], { env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '' } });
    return { code: 0, out: stdout };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: `${e.stdout}${e.stderr}` };
  }
}

describe('npm run admin', () => {
  it('creates an organization, a publisher, a scoped key, an OAuth client and credit', async () => {
    expect((await admin('create-org', 'acme')).out).toMatch(/^organization acme \(/);
    expect((await admin('create-publisher', 'acme', 'acme-press')).out).toMatch(/^publisher acme-press \(/);
    const key = await admin('create-key', 'acme', '--scopes', 'agents:read', '--label', 'ops');
    const plaintext = /(sk_[A-Za-z0-9_-]{59})/.exec(key.out)?.[1];
    expect(plaintext).toBeDefined();
    const client = await admin('create-oauth-client', 'acme', '--scopes', 'agents:read');
    const clientId = /client_id:\s+(\S+)/.exec(client.out)?.[1];
    const clientSecret = /client_secret:\s+(\S+)/.exec(client.out)?.[1];
    expect((await admin('add-credit', 'acme', '12.50')).out).toContain('ledger balance $12.50');
    expect((await admin('list-orgs')).out).toMatch(/acme \([^)]+\)\n\s+publisher acme-press/);

    const platform = await startTestPlatform({ dataDir }, {}, { adminKey: 'unused' });
    try {
      expect(platform.bootstrap).toBeNull(); // the database already has an organization: no default one
      const agents = await platform.mgmt('/api/v1/agents', { key: plaintext! });
      expect(agents.status).toBe(200);
      expect((await platform.mgmt('/api/v1/keys', { key: plaintext! })).status).toBe(403);
      const token = await platform.api('/oauth2/token', {
        method: 'POST',
        key: null,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId!, client_secret: clientSecret! }).toString(),
      });
      expect(token.status).toBe(200);
    } finally {
      await platform.close();
    }
    expect((await admin('revoke-oauth-client', clientId!)).out).toContain('revoked');
  }, 180_000); // seven CLI runs, each starting tsx and opening the embedded database

  it('refuses bad input with a message and a non-zero exit', async () => {
    const unknown = await admin('create-key', 'nobody');
    expect(unknown.code).not.toBe(0);
    expect(unknown.out).toContain('No organization named "nobody"');
    const scope = await admin('create-key', 'acme', '--scopes', 'root');
    expect(scope.code).not.toBe(0);
    expect(scope.out).toContain('unknown scope(s): root');
    const usage = await admin('frobnicate');
    expect(usage.code).not.toBe(0);
    expect(usage.out).toContain('Usage: npm run admin');
  }, 90_000);

  it("creates a key with limits and changes them; a server enforces the key's models", async () => {
    expect((await admin('create-org', 'limited')).out).toMatch(/^organization limited \(/);
    const created = await admin('create-key', 'limited', '--scopes', 'inference,keys:manage', '--weekly-cap', '5', '--models', 'local/*');
    expect(created.out).toContain('weekly cap $5.00, no credit share, models local/*');
    const id = /^key (\S+) for/.exec(created.out)?.[1];
    const plaintext = /(sk_[A-Za-z0-9_-]{59})/.exec(created.out)?.[1];
    const changed = await admin('set-key-limits', 'limited', id!, '--credit-share', '25', '--weekly-cap', 'none');
    expect(changed.out).toContain('no weekly cap, 25% of the organization\'s credit per week, models local/*');
    expect((await admin('set-key-limits', 'limited', id!, '--models', 'a/b/c')).code).not.toBe(0);

    const platform = await startTestPlatform({ dataDir }, {}, { adminKey: 'unused' });
    try {
      const key = await platform.mgmt(`/api/v1/keys/${id}`, { key: plaintext! });
      expect((await key.json()).data.limits).toEqual({ weeklyCapMicros: null, creditSharePercent: 25, allowedModels: ['local/*'] });
      const body = (model: string) => JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
      expect((await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: plaintext!, body: body('local-chat') })).status).toBe(200);
    } finally {
      await platform.close();
    }
  }, 180_000);
});
