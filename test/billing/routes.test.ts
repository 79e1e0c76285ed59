// The billing refusals on every gated route, table-driven from the contract: every metered
// operation that declares 402 (completions, grounded, embeddings, responses, v1, the
// aliases, the Chat API's message) refuses an empty prepaid balance with 402
// INSUFFICIENT_CREDIT and a reached weekly cap with 429 SPENDING_LIMIT_EXCEEDED (1005):
// not retryable (X-Should-Retry: false), no Retry-After, before any model call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes, type RouteDefinition } from '../../generated/contract/routes.js';
import { isInferenceOperation } from '../../server/http/admission/billing.js';
import { sampleRequest } from '../support/requests.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { createOrg, pricedCatalog, type TestOrg } from './support.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
});
afterAll(() => platform?.close());

const gated = routes.filter((r) => r.api === 'api' && isInferenceOperation(r) && '402' in r.errorBodies);
// The coding route draws on its plan (402 NO_PLAN / GC_ALLOWANCE_EXHAUSTED: gates.test.ts) and never counts against the cap.
const onCredit = gated.filter((r) => r.operationId !== 'createCodingChatCompletion');

async function send(route: RouteDefinition, org: TestOrg) {
  const { path, init } = sampleRequest(route);
  const res = await platform.api(path, { ...init, key: org.key });
  const body = await res.json();
  return { res, body, name: route.errorBodies[res.status] === 'DetailError' ? (body.detail as string) : (body.error?.name as string) };
}

async function nothingRecorded(org: TestOrg) {
  await platform.services.billing.reservations.drain();
  expect(await platform.services.database.prisma.usageRecord.count({ where: { organizationId: org.id } })).toBe(0);
}

describe('every gated route', () => {
  it('covers completions, grounded, embeddings, responses, v1, the aliases and the Chat API', () => {
    expect(onCredit.map((r) => r.operationId).sort()).toEqual([
      'createChatCompletionAlias',
      'createChatCompletionV1',
      'createEmbeddings',
      'createEmbeddingsAlias',
      'createGroundedChatCompletion',
      'createGroundedChatCompletionAlias',
      'createGroundedResponse',
      'createGuardedChatCompletion',
      'createResponse',
      'createResponseAlias',
      'createResponseV1',
      'sendChatMessage',
    ]);
  });

  it.each(onCredit.map((r) => [r.operationId, r] as const))('%s: 402 INSUFFICIENT_CREDIT on an empty prepaid balance', async (_, route) => {
    const org = await createOrg(platform, 'empty');
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    const { res, body, name } = await send(route, org);
    expect(res.status, JSON.stringify(body)).toBe(402);
    expect(name).toMatch(route.errorBodies[402] === 'DetailError' ? /prepaid balance is empty/ : /^INSUFFICIENT_CREDIT$/);
    if (route.errorBodies[402] !== 'DetailError') expect(body.error.retryable).toBe(false);
    expect(body.trace_id).toBe(res.headers.get('x-trace-id'));
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(res.headers.get('retry-after')).toBeNull();
    await nothingRecorded(org);
  });

  it.each(onCredit.map((r) => [r.operationId, r] as const))('%s: 429 SPENDING_LIMIT_EXCEEDED (1005) at the weekly cap, with credit left', async (_, route) => {
    const org = await createOrg(platform, 'capped');
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    await platform.services.billing.accounts.addCredit(org.id, 100_000_000n, 'plenty');
    await platform.services.billing.accounts.setWeeklyCap(org.id, 1n);
    const { res, body, name } = await send(route, org);
    expect(res.status, JSON.stringify(body)).toBe(429);
    if (route.errorBodies[429] === 'DetailError') expect(name).toMatch(/weekly spending cap/);
    else expect(body.error).toMatchObject({ code: 1005, name: 'SPENDING_LIMIT_EXCEEDED', retryable: false });
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(res.headers.get('retry-after')).toBeNull();
    await nothingRecorded(org);
  });
});
