// Every operation of openapi.yaml is routed, authenticated and validated, and answers in
// a shape the contract declares (or 501 from its scaffolded stub).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../generated/contract/routes.js';
import { contractProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { sampleRequest } from '../support/requests.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

const call = (route: (typeof routes)[number], init: RequestInit & { key?: string | null }, path: string) =>
  route.api === 'management' ? platform.mgmt(path, init) : platform.api(path, init);

const named = (list: typeof routes) => list.map((r) => [`${r.method.toUpperCase()} ${r.path} (${r.operationId})`, r] as const);

describe.each(named(routes.filter((r) => r.auth.scheme === 'bearer')))('%s', (_name, route) => {
  it('answers 401 with a trace id when Authorization is missing', async () => {
    const { path, init } = sampleRequest(route);
    const res = await call(route, { ...init, key: null }, path);
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body.trace_id).toMatch(/^trc_[0-9a-f]{32}$/);
    expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
    expect(contractProblems(route.operationId, 401, body)).toEqual([]);
  });
});

describe.each(named(routes))('%s', (_name, route) => {
  it('reaches its handler with a contract-valid request', async () => {
    const { path, init } = sampleRequest(route);
    const res = await call(route, init, path);
    const text = await res.text();
    expect(text).not.toContain('No operation at');
    // A sampled valid request passes validation: any 422 would be the contract contradicting itself.
    expect(res.status, text).not.toBe(422);
    if (res.status === 501) {
      expect(JSON.parse(text).trace_id).toBeTruthy();
      return;
    }
    expect(Object.keys(route.errorBodies).map(Number).concat([route.successStatus, 200, 201])).toContain(res.status);
    if (res.headers.get('content-type')?.includes('application/json')) {
      expect(contractProblems(route.operationId, res.status, JSON.parse(text))).toEqual([]);
    }
  });
});
