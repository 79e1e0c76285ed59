// Deprecated OAuth 2.0 client credentials: a token that works like a key, expires, dies
// with its client, and deprecation headers on every answer.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashSecret } from '../../server/identity/credentials.js';
import type { OAuthClientCredentials } from '../../server/identity/oauth.js';
import { conformanceProblems } from '../support/conformance.js';
import { contractProblems } from '../support/contract.js';
import { logLinesOf, startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
let client: OAuthClientCredentials;
beforeAll(async () => {
  platform = await startTestPlatform();
  const org = await platform.services.identity.organizations.findOrganization('default');
  client = await platform.services.identity.oauth.createClient(org.id, ['agents:read', 'inference']);
});
afterAll(() => platform?.close());

function requestToken(form: Record<string, string>, basic?: OAuthClientCredentials) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.clientId}:${basic.clientSecret}`).toString('base64')}`;
  return platform.api('/oauth2/token', { method: 'POST', key: null, headers, body: new URLSearchParams(form).toString() });
}

/** Response headers as the conformance check takes them (lower-case names). */
function headersOf(res: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => (headers[name] = value));
  return headers;
}

function expectDeprecationHeaders(res: Response) {
  expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
  expect(new Date(res.headers.get('sunset')!).getUTCFullYear()).toBe(2026);
  expect(new Date(res.headers.get('sunset')!).getUTCMonth()).toBe(11);
}

describe('POST /oauth2/token', () => {
  it('issues a one-hour bearer token for HTTP Basic credentials', async () => {
    const res = await requestToken({ grant_type: 'client_credentials' }, client);
    expect(res.status).toBe(200);
    expectDeprecationHeaders(res);
    const body = await res.json();
    expect(body).toEqual({ access_token: expect.stringMatching(/^oat_/), expires_in: 3600, token_type: 'Bearer' });
    const health = await platform.mgmt('/api/v1/health', { key: body.access_token });
    expect(health.status).toBe(200);
    expectDeprecationHeaders(health); // every request made with a token hears about the sunset
    expect((await platform.mgmt('/api/v1/keys', { key: body.access_token })).status).toBe(403); // no keys:manage
  });

  it('accepts credentials as form fields', async () => {
    const res = await requestToken({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
    expect(res.status).toBe(200);
  });

  it('answers RFC 6749 errors with a trace id and the deprecation headers', async () => {
    const wrong = await requestToken({ grant_type: 'client_credentials' }, { ...client, clientSecret: 'nope' });
    expect(wrong.status).toBe(401);
    expectDeprecationHeaders(wrong);
    const wrongBody = await wrong.json();
    expect(wrongBody).toMatchObject({ error: 'invalid_client', trace_id: expect.any(String) });
    expect(contractProblems('createOAuthToken', 401, wrongBody)).toEqual([]);

    const grant = await requestToken({ grant_type: 'password' }, client);
    expect(grant.status).toBe(400);
    expect((await grant.json()).error).toBe('unsupported_grant_type');

    const garbled = await platform.api('/oauth2/token', {
      method: 'POST',
      key: null,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('a%:b').toString('base64')}` },
      body: 'grant_type=client_credentials',
    });
    expect(garbled.status).toBe(401);
    expect((await garbled.json()).error).toBe('invalid_client');
    // RFC 6749 5.2: every 401 of the token endpoint says how to authenticate, as the contract declares.
    for (const res of [wrong, garbled]) expect(res.headers.get('www-authenticate')).toBe('Basic realm="oauth2"');

    const missing = await requestToken({ grant_type: 'client_credentials' });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toBe('invalid_request');

    const noGrant = await requestToken({}, client);
    expect(noGrant.status).toBe(400);
    const noGrantBody = await noGrant.json();
    expect(noGrantBody.error).toBe('invalid_request');
    expect(contractProblems('createOAuthToken', 400, noGrantBody)).toEqual([]);
  });

  it('answers every status the contract declares for it, headers and body included', async () => {
    const answers = [
      await requestToken({ grant_type: 'client_credentials' }, client),
      await requestToken({ grant_type: 'client_credentials' }, { ...client, clientSecret: 'nope' }),
      await requestToken({ grant_type: 'password' }, client),
    ];
    // A failing database: the 500 in the OAuth error shape, `server_error`.
    const failing = vi.spyOn(platform.services.identity.oauth, 'issueToken').mockRejectedValueOnce(new Error('database down'));
    answers.push(await requestToken({ grant_type: 'client_credentials' }, client));
    failing.mockRestore();
    const observed = await Promise.all(answers.map(async (res) => ({ status: res.status, headers: headersOf(res), body: await res.text() })));
    expect(observed.map((o) => o.status)).toEqual([200, 401, 400, 500]);
    expect(JSON.parse(observed[3].body)).toMatchObject({ error: 'server_error', trace_id: expect.any(String) });
    for (const answer of observed) expect(conformanceProblems('createOAuthToken', { method: 'POST' }, answer)).toEqual([]);
  });

  it('tokens expire', async () => {
    const { access_token } = await (await requestToken({ grant_type: 'client_credentials' }, client)).json();
    await platform.services.database.prisma.oAuthAccessToken.update({
      where: { tokenHash: hashSecret(access_token) },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await platform.mgmt('/api/v1/health', { key: access_token })).status).toBe(401);
  });

  it('tokens die with their client, at once', async () => {
    const org = await platform.services.identity.organizations.findOrganization('default');
    const doomed = await platform.services.identity.oauth.createClient(org.id, ['agents:read']);
    const { access_token } = await (await requestToken({ grant_type: 'client_credentials' }, doomed)).json();
    expect((await platform.mgmt('/api/v1/agents', { key: access_token })).status).toBe(200);
    await platform.services.identity.oauth.revokeClient(doomed.clientId);
    expect((await platform.mgmt('/api/v1/agents', { key: access_token })).status).toBe(401);
    expect((await requestToken({ grant_type: 'client_credentials' }, doomed)).status).toBe(401);
  });

  it('answers a NUL in the credentials, as form fields or HTTP Basic, with 400 invalid_request', async () => {
    const answers = [
      await requestToken({ grant_type: 'client_credentials', client_id: 'a\0b', client_secret: 'secret' }),
      await requestToken({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: 's\0' }),
      await requestToken({ grant_type: 'client_credentials' }, { clientId: 'a\0b', clientSecret: 'secret' }),
      await requestToken({ grant_type: 'client_credentials' }, { clientId: 'a%00b', clientSecret: 'secret' }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body).toMatchObject({ error: 'invalid_request', trace_id: expect.any(String) });
      expect(contractProblems('createOAuthToken', 400, body)).toEqual([]);
    }
  });

  it('logs a failed request once, with only a short, clean prefix of what the caller sent', async () => {
    const huge = `${'x'.repeat(100)}\nforged log line${'y'.repeat(1_000_000)}`;
    const failures = [
      await requestToken({ grant_type: 'client_credentials', client_id: huge, client_secret: 'nope' }),
      await requestToken({ grant_type: huge }, client),
      await requestToken({ grant_type: 'client_credentials' }, { ...client, clientSecret: 'nope' }),
    ];
    expect(failures.map((res) => res.status)).toEqual([401, 400, 401]);
    for (const res of failures) {
      const lines = await logLinesOf(platform, res);
      // The request line alone: no deprecation warning for credentials that did not authenticate.
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain('deprecated OAuth');
      expect(lines[0].length).toBeLessThan(2000);
      expect(lines[0]).not.toContain('forged log line');
    }
  });

  it('warns about the deprecation once per client, on its first token', async () => {
    const org = await platform.services.identity.organizations.findOrganization('default');
    const fresh = await platform.services.identity.oauth.createClient(org.id, ['agents:read']);
    const first = await logLinesOf(platform, await requestToken({ grant_type: 'client_credentials' }, fresh));
    expect(first).toHaveLength(2);
    expect(JSON.parse(first.find((line) => line.includes('deprecated OAuth'))!)).toMatchObject({ level: 40, clientId: fresh.clientId });
    const second = await logLinesOf(platform, await requestToken({ grant_type: 'client_credentials' }, fresh));
    expect(second).toHaveLength(1);
    expect(second[0]).toContain('request completed');
  });

  it('keeps client secrets and tokens out of the logs', async () => {
    const logs = platform.logs.join('\n');
    expect(logs).not.toContain(client.clientSecret);
    expect(logs).not.toMatch(/oat_[A-Za-z0-9_-]{20,}/);
  });
});
