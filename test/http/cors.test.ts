// CORS on the API port: off by default (OPTIONS stays a 405); with CORS_ORIGINS, preflights
// from allowed origins are answered 204 and answers expose the headers clients read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

const PATH = '/ai/v2/guarded/chat/completions';
const preflight = (origin: string) => ({
  method: 'OPTIONS',
  key: null,
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
});

describe('CORS_ORIGINS', () => {
  it('is off by default, and parses a list or *', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:3000' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:3000',
    ]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/' })).toThrow(ConfigError);
  });
});

describe('with CORS off (the default)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform?.close());

  it('answers OPTIONS as today: 405, no CORS headers', async () => {
    const res = await platform.api(PATH, preflight('https://app.example.com'));
    expect(res.status).toBe(405);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const get = await platform.api('/ai/v2/models', { headers: { origin: 'https://app.example.com' } });
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('with allowed origins', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ corsOrigins: ['https://app.example.com'] });
  });
  afterAll(() => platform?.close());

  it('answers a preflight from an allowed origin', async () => {
    const res = await platform.api(PATH, preflight('https://app.example.com'));
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('idempotency-key');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(res.headers.get('vary')).toMatch(/origin/i);
  });

  it('gives a disallowed origin no Access-Control-Allow-Origin', async () => {
    const res = await platform.api(PATH, preflight('https://evil.example.com'));
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const get = await platform.api('/ai/v2/models', { headers: { origin: 'https://evil.example.com' } });
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('puts the CORS headers on actual answers, errors included', async () => {
    const ok = await platform.api('/ai/v2/models', { headers: { origin: 'https://app.example.com' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    const exposed = ok.headers.get('access-control-expose-headers')!.toLowerCase().split(/\s*,\s*/);
    for (const name of ['x-trace-id', 'idempotent-replayed', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'deprecation', 'sunset', 'x-sources-returned', 'x-gateway-route']) {
      expect(exposed).toContain(name);
    }
    const unauthorized = await platform.api('/ai/v2/models', { key: null, headers: { origin: 'https://app.example.com' } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
  });

  it('leaves the management port alone, and an OPTIONS that is no preflight is still a 405', async () => {
    const mgmt = await platform.mgmt('/api/v1/health', preflight('https://app.example.com'));
    expect(mgmt.status).toBe(405);
    expect(mgmt.headers.get('access-control-allow-origin')).toBeNull();
    expect((await platform.api(PATH, { method: 'OPTIONS', key: null })).status).toBe(405);
  });
});

describe('with CORS_ORIGINS=*', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ corsOrigins: ['*'] });
  });
  afterAll(() => platform?.close());

  it('allows any origin', async () => {
    const res = await platform.api(PATH, preflight('https://anywhere.example'));
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});
