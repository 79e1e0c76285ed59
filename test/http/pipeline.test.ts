// The request pipeline's documented behaviour: trace ids, auth errors, malformed and invalid
// bodies, unknown routes, size limits, and credentials kept out of logs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubbedOperations } from '../../server/http/not-implemented.js';
import type { Scope } from '../../generated/contract/routes.js';
import { hashSecret, newApiKey } from '../../server/identity/credentials.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ jsonBodyLimit: 64 * 1024 });
});
afterAll(() => platform?.close());

const chat = { model: 'gloo-openai-gpt-5-mini', messages: [{ role: 'user', content: 'Hello' }] };
const TRACE = /^trc_[0-9a-f]{32}$/;

async function keyWithScopes(scopes: Scope[]): Promise<string> {
  const org = await platform.services.identity.organizations.findOrganization('default');
  return (await platform.services.identity.keys.issue(org.id, { scopes })).plaintext;
}

describe('authentication', () => {
  it('answers a missing Authorization on a data operation with the gateway body', async () => {
    const res = await platform.api('/engine/v1/files/7d1c8f9e-3a52-4c1e-9a1f-2b7f3c4d5e6f', { key: null });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toEqual({ error: 'Missing Authorization', code: 'unauthorized_missing_authorization', trace_id: expect.stringMatching(TRACE) });
  });

  it('answers a missing Authorization on a completion with the AI error envelope', async () => {
    const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(chat), key: null });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body.error).toMatchObject({ name: 'UNAUTHORIZED', retryable: false, category: 'client' });
    expect(typeof body.error.code).toBe('number');
    expect(body.trace_id).toMatch(TRACE);
    expect(contractProblems('createGuardedChatCompletion', 401, body)).toEqual([]);
  });

  it('rejects an unknown key with 401, and with a gateway 403 on search', async () => {
    const unknown = newApiKey().plaintext;
    const file = await platform.api('/engine/v1/files/7d1c8f9e-3a52-4c1e-9a1f-2b7f3c4d5e6f', { key: unknown });
    expect(file.status).toBe(401);
    const search = await platform.api('/ai/v1/data/search', {
      method: 'POST',
      key: unknown,
      body: JSON.stringify({ query: 'grace', collection: 'articles', tenant: 'default' }),
    });
    expect(search.status).toBe(403);
    expect(await search.json()).toMatchObject({ code: 'forbidden', trace_id: expect.stringMatching(TRACE) });
    const malformed = await platform.api('/ai/v1/data/search', {
      method: 'POST',
      headers: { authorization: 'Token abc' },
      body: JSON.stringify({ query: 'grace', collection: 'articles' }),
    });
    expect(malformed.status).toBe(403);
  });

  it('refuses a key that lacks the operation scope with 403', async () => {
    const key = await keyWithScopes(['data:read']);
    const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: JSON.stringify(chat), key });
    expect(res.status).toBe(403);
    const body = await res.json();
    expect(body.error.name).toBe('FORBIDDEN');
    expect(body.error.message).toContain('inference');
  });

  it('stops accepting a revoked or expired key', async () => {
    const { prisma } = platform.services.database;
    const key = await keyWithScopes(['agents:read']);
    expect((await platform.mgmt('/api/v1/health', { key })).status).toBe(200);
    const { id } = await prisma.apiKey.findUniqueOrThrow({ where: { keyHash: hashSecret(key) } });
    expect((await platform.mgmt(`/api/v1/keys/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await platform.mgmt('/api/v1/health', { key })).status).toBe(401);
    const expiring = await keyWithScopes([]);
    await prisma.apiKey.update({ where: { keyHash: hashSecret(expiring) }, data: { expiresAt: new Date(Date.now() - 1) } });
    expect((await platform.mgmt('/api/v1/health', { key: expiring })).status).toBe(401);
  });
});

describe('bodies', () => {
  it('answers malformed JSON with 400 and a trace id', async () => {
    const res = await platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', body: '{"messages": [' });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.trace_id).toMatch(TRACE);
    expect(body.error.name).toBe('INVALID_REQUEST');
  });

  it('answers field validation failures with 422 in the spec 2.6 shape, every failure listed', async () => {
    const res = await platform.api('/ai/v2/guarded/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'x', temperature: 'hot', certainty: 1 }),
    });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.trace_id).toMatch(TRACE);
    expect(body.detail).toEqual(
      expect.arrayContaining([
        { loc: ['body', 'messages'], msg: 'Field required', type: 'missing', input: null },
        expect.objectContaining({ loc: ['body', 'temperature'], type: 'float_type', input: 'hot' }),
      ]),
    );
    expect(contractProblems('createGuardedChatCompletion', 422, body)).toEqual([]);
  });

  it('answers embeddings validation failures with the detail object variant', async () => {
    const res = await platform.api('/ai/v2/direct/embeddings', { method: 'POST', body: JSON.stringify({ model: 'x' }) });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.detail).toMatchObject({ type: expect.any(String), code: expect.any(String), retryable: false, message: expect.any(String) });
    expect(body.detail.param).toBe('input');
    expect(contractProblems('createEmbeddings', 422, body)).toEqual([]);
  });

  it('answers a body over the limit with 413 and a trace id', async () => {
    const res = await platform.api('/ai/v2/guarded/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ ...chat, messages: [{ role: 'user', content: 'x'.repeat(100_000) }] }),
    });
    expect(res.status).toBe(413);
    expect((await res.json()).trace_id).toMatch(TRACE);
  });
});

describe('hostile input', () => {
  it('refuses strings with NUL as malformed JSON (400), not a database error', async () => {
    const res = await platform.mgmt('/api/v1/agents', { method: 'POST', body: JSON.stringify({ name: 'a\u0000b' }) });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.message).toContain('NUL');
    expect(body.trace_id).toMatch(TRACE);
  });

  it('answers a broken %-escape in the path with 400, not 500', async () => {
    const res = await platform.mgmt('/api/v1/agents/%E0%A4%A');
    expect(res.status).toBe(400);
    expect((await res.json()).trace_id).toMatch(TRACE);
  });

  it('answers a malformed multipart body with 400', async () => {
    const res = await platform.api('/ingestion/v2/files', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="publisher_id"\r\n\r\nabc',
    });
    expect(res.status).toBe(400);
    expect((await res.json()).trace_id).toMatch(TRACE);
  });

  it('answers another method on a known path, OPTIONS included, with 405 and Allow', async () => {
    for (const method of ['PUT', 'OPTIONS']) {
      const res = await platform.mgmt('/api/v1/health', { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET');
      expect((await res.json()).trace_id).toMatch(TRACE);
    }
  });

  it('matches paths case-sensitively', async () => {
    expect((await platform.mgmt('/API/V1/HEALTH')).status).toBe(404);
  });

  it('answers a request whose body never finishes with 408 once REQUEST_TIMEOUT_MS has passed', async () => {
    const slow = await startTestPlatform({ requestTimeoutMs: 1_000 });
    try {
      const { connect } = await import('node:net');
      const url = new URL(slow.apiUrl);
      const started = Date.now();
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () =>
          socket.write(`POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=`),
        );
        let data = '';
        socket.on('data', (chunk) => (data += chunk));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1.1 408/);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).trace_id).toMatch(TRACE);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await slow.close();
    }
  });

  it('answers a request Node cannot parse with a JSON 400 and a trace id', async () => {
    const { connect } = await import('node:net');
    const url = new URL(platform.apiUrl);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write('GARBAGE\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk) => (data += chunk));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1.1 400/);
    expect(raw).toMatch(/X-Trace-Id: trc_[0-9a-f]{32}/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).trace_id).toMatch(TRACE);
  });
});

describe('unknown routes', () => {
  it.each([
    ['api', '/no/such/route'],
    ['mgmt', '/api/v1/nothing'],
  ])('answers 404 with a trace id on the %s port', async (which, path) => {
    const res = which === 'api' ? await platform.api(path) : await platform.mgmt(path);
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.trace_id).toMatch(TRACE);
    expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
  });

  it('does not serve management operations on the API port, nor API operations on the management port', async () => {
    expect((await platform.api('/api/v1/health')).status).toBe(404);
    expect((await platform.mgmt('/engine/v1/files/7d1c8f9e-3a52-4c1e-9a1f-2b7f3c4d5e6f')).status).toBe(404);
  });
});

describe('deprecation', () => {
  it('flags deprecated operations with Deprecation and a successor link', async () => {
    const res = await platform.api('/ai/v2/chat/completions', { method: 'POST', body: JSON.stringify(chat) });
    expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(res.headers.get('link')).toContain('/ai/v2/guarded/chat/completions');
  });
});

describe('logs', () => {
  it('leave out query strings', async () => {
    await platform.mgmt('/api/v1/health?client_secret=do-not-log-me');
    expect(platform.logs.join('\n')).not.toContain('do-not-log-me');
  });

  it('name a database error by kind only, never with its query arguments', async () => {
    const leaky = await startTestPlatform({}, {
      admission: [
        () => () => {
          throw Object.assign(new Error('Invalid `prisma.apiKey.create()` invocation: { keyHash: "0123abcd-secret-hash" }'), {
            name: 'PrismaClientValidationError',
            code: 'P2000',
          });
        },
      ],
    });
    try {
      const res = await leaky.mgmt('/api/v1/health');
      expect(res.status).toBe(500);
      const text = leaky.logs.join('\n');
      expect(text).toContain('PrismaClientValidationError');
      expect(text).not.toContain('0123abcd-secret-hash');
    } finally {
      await leaky.close();
    }
  });

  it('name the operations still answered by stubs at boot', () => {
    const stubs = stubbedOperations();
    const line = platform.logs.find((l) => l.includes('operations are still stubs'));
    if (stubs.length === 0) expect(line).toBeUndefined();
    else expect(JSON.parse(line!).operations).toEqual(stubs);
  });

  it('carry the trace id and never a key or its hash', async () => {
    const res = await platform.mgmt('/api/v1/health');
    const traceId = res.headers.get('x-trace-id')!;
    await platform.api('/engine/v1/files/not-a-uuid');
    const text = platform.logs.join('\n');
    expect(text).toContain(traceId);
    expect(text).not.toContain(platform.adminKey);
    expect(text).not.toContain(hashSecret(platform.adminKey));
    expect(text).not.toMatch(/Bearer\s+sk_/i);
  });
});
