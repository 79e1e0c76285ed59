// Idempotency-Key: a repeated POST replays the first answer instead of running twice;
// a key reused for another request is refused; failures are not kept.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;
let slowAgents = 0;
let explosions = 0;
beforeAll(async () => {
  platform = await startTestPlatform({ idempotencyWaitMs: 300 }, {
    admission: [
      // Holds agent creations named "slow" so a concurrent repeat finds the first still running.
      (route) => async (req, res, next) => {
        if (route.operationId === 'createAgent' && req.body?.name === 'slow') {
          slowAgents++;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
        if (route.operationId === 'createAgent' && req.body?.name === 'explode once' && explosions++ === 0) {
          throw new Error('a transient failure');
        }
        // An answer the contract does not allow: response validation (on in tests) must still see it.
        if (route.operationId === 'createAgent' && req.body?.name === 'off contract') {
          res.status(201).json({ not: 'an agent' });
          return;
        }
        next();
      },
    ],
  });
});
afterAll(() => platform?.close());

const createAgent = (body: object, key: string) =>
  platform.mgmt('/api/v1/agents', { method: 'POST', body: JSON.stringify(body), headers: { 'idempotency-key': key } });

describe('Idempotency-Key', () => {
  it('replays the first answer to a repeat, without running it again', async () => {
    const key = randomUUID();
    const first = await createAgent({ name: 'once' }, key);
    expect(first.status).toBe(201);
    const firstBody = await first.json();
    const again = await createAgent({ name: 'once' }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await again.json()).data).toEqual(firstBody.data);
    const count = await platform.services.database.prisma.agent.count({ where: { name: 'once' } });
    expect(count).toBe(1);
  });

  it('runs each request once without a key, and separately per key', async () => {
    await createAgent({ name: 'twice' }, randomUUID());
    await createAgent({ name: 'twice' }, randomUUID());
    await platform.mgmt('/api/v1/agents', { method: 'POST', body: JSON.stringify({ name: 'twice' }) });
    expect(await platform.services.database.prisma.agent.count({ where: { name: 'twice' } })).toBe(3);
  });

  it('refuses a key reused for a different request with 400', async () => {
    const key = randomUUID();
    expect((await createAgent({ name: 'first use' }, key)).status).toBe(201);
    const reused = await createAgent({ name: 'something else' }, key);
    expect(reused.status).toBe(400);
    const body = await reused.json();
    expect(body.error.message).toContain('different request');
    expect(body.trace_id).toMatch(/^trc_/);
  });

  it('scopes keys to the caller organization', async () => {
    const key = randomUUID();
    expect((await createAgent({ name: 'org-a' }, key)).status).toBe(201);
    const orgB = await platform.services.identity.organizations.createOrganization(`idem-${randomUUID()}`);
    const bKey = (await platform.services.identity.keys.issue(orgB.id, { scopes: ['agents:write'] })).plaintext;
    const res = await platform.mgmt('/api/v1/agents', {
      method: 'POST',
      key: bKey,
      body: JSON.stringify({ name: 'org-a' }),
      headers: { 'idempotency-key': key },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });

  it('answers 409 to a repeat while the first is still running, then replays it', async () => {
    const key = randomUUID();
    const first = createAgent({ name: 'slow' }, key);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const during = await createAgent({ name: 'slow' }, key);
    expect(during.status).toBe(409);
    expect((await during.json()).error.code).toBe('idempotency_key_in_use');
    expect((await first).status).toBe(201);
    const after = await createAgent({ name: 'slow' }, key);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(slowAgents).toBe(1);
  });

  it('does not keep a 5xx: the retry runs again', async () => {
    const key = randomUUID();
    expect((await createAgent({ name: 'explode once' }, key)).status).toBe(500);
    const retry = await createAgent({ name: 'explode once' }, key);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('still checks an answer against the contract, and keeps none that fails it', async () => {
    const key = randomUUID();
    const first = await createAgent({ name: 'off contract' }, key);
    expect(first.status).toBe(500);
    const again = await createAgent({ name: 'off contract' }, key);
    expect(again.status).toBe(500);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keeps the operation\'s own 4xx answers, but not requests the contract rejected', async () => {
    const key = randomUUID();
    const invalid = await createAgent({ name: 'bad', model: { mode: 'model' } }, key);
    expect(invalid.status).toBe(422);
    // A 4xx answered by the operation itself is kept (same request, same answer)...
    const repeat = await createAgent({ name: 'bad', model: { mode: 'model' } }, key);
    expect(repeat.status).toBe(422);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    // ...but a body the contract rejects never reached the stage, so the key stays free.
    const key2 = randomUUID();
    expect((await createAgent({ description: 'no name' }, key2)).status).toBe(422);
    expect((await createAgent({ name: 'now valid' }, key2)).status).toBe(201);
  });
});
