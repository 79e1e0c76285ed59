// A crash between reserve and settle: the hold stays in the database (the record), and the
// next start on the same data releases it without charging, so the credit it held is
// available again. On PostgreSQL with several instances: a restart under the same
// INSTANCE_ID releases its crashed process's holds at once, any instance releases those of
// a process whose heartbeat stopped, and rows and counters change in one statement.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESERVATION_TTL_MS } from '../../server/billing/reservations.js';
import { DEAD_AFTER_MS } from '../../server/billing/instances.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog, type TestOrg } from './support.js';

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'billing-reconcile-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe('restart after a crash between reserve and settle', () => {
  it('releases the open hold at start (PGlite: every open hold is a dead instance’s) and charges nothing', async () => {
    const first = await startTestPlatform({ dataDir, logLevel: 'silent' }, { catalog: pricedCatalog() });
    const org = await createOrg(first, 'crash');
    const { billing } = first.services;
    await billing.accounts.setMode(org.id, 'prepaid');
    await billing.accounts.credit.add(org.id, 1_000_000n, 'test');
    // A request admitted (its hold written) whose instance dies before it settles.
    const hold = await billing.reservations.reserve({ organizationId: org.id, apiKeyId: org.keyId, operation: 'createGuardedChatCompletion', model: 'priced', product: null, estimateMicros: 900_000n, traceId: 'trc_crashed', debit: true, limitedKey: false });
    expect((await billing.accounts.account(org.id)).reservedMicros).toBe(900_000n);
    expect((await first.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status).toBe(402);
    const adminKey = first.adminKey;
    await first.close();

    const second = await startTestPlatform({ dataDir, logLevel: 'silent' }, { catalog: pricedCatalog() }, { adminKey });
    try {
      const row = await second.services.database.prisma.billingReservation.findUniqueOrThrow({ where: { id: hold.id } });
      expect(row.outcome).toBe('released');
      expect(row.settledAt).not.toBeNull();
      const account = await second.services.billing.accounts.account(org.id);
      expect(account.reservedMicros).toBe(0n);
      expect(account.balanceMicros).toBe(1_000_000n);
      expect(await second.services.billing.accounts.credit.balance(org.id)).toBe(1_000_000n);
      // The credit it held serves requests again.
      expect((await second.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status).toBe(200);
    } finally {
      await second.close();
    }
  }, 120_000);
});

describePostgres('holds of dead processes (PostgreSQL, several instances)', () => {
  const database = useTestDatabase('billing_reconcile');
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent', databaseUrl: database.url, instanceId: 'node-b' }, { catalog: pricedCatalog() });
  }, 60_000);
  afterAll(() => platform?.close());

  const prisma = () => platform.services.database.prisma;

  /** A process that took a hold of `micros` and then vanished without settling it: its instance row and its open hold. */
  async function crashedHold(orgId: string, instanceId: string, heartbeatAgoMs: number, micros = 900_000n): Promise<string> {
    const incarnation = randomUUID();
    await prisma().$executeRaw`
      INSERT INTO billing_instances (incarnation, instance_id, heartbeat_at) VALUES (${incarnation}::uuid, ${instanceId}, now() - ${`${heartbeatAgoMs} milliseconds`}::interval)`;
    const hold = await prisma().billingReservation.create({
      data: { organizationId: orgId, operation: 'createGuardedChatCompletion', model: 'priced', estimateMicros: micros, traceId: 'trc_crashed', incarnation },
    });
    await prisma().billingAccount.update({ where: { organizationId: orgId }, data: { reservedMicros: { increment: micros } } });
    return hold.id;
  }

  async function prepaidOrg(label: string): Promise<TestOrg> {
    const org = await createOrg(platform, label);
    await platform.services.billing.accounts.setMode(org.id, 'prepaid');
    await platform.services.billing.accounts.addCredit(org.id, 1_000_000n, 'test');
    return org;
  }

  const outcome = async (id: string) => (await prisma().billingReservation.findUniqueOrThrow({ where: { id } })).outcome;

  it('a restart under the same INSTANCE_ID releases what the crashed process held, at once, charging nothing', async () => {
    const org = await prepaidOrg('restart');
    // Its heartbeat is fresh: others would wait for it to go stale; its own restart need not.
    const hold = await crashedHold(org.id, 'node-a', 0);
    expect((await chat(platform, org)).status).toBe(402);
    const restarted = await startTestPlatform({ logLevel: 'silent', databaseUrl: database.url, instanceId: 'node-a' }, { catalog: pricedCatalog() }, { adminKey: platform.adminKey });
    try {
      expect(await outcome(hold)).toBe('released');
      expect((await platform.services.billing.accounts.account(org.id)).reservedMicros).toBe(0n);
      expect(await platform.services.billing.accounts.credit.balance(org.id)).toBe(1_000_000n);
      expect((await chat(restarted, org)).status).toBe(200);
    } finally {
      await restarted.close();
    }
  }, 60_000);

  it('releases the holds of a process whose heartbeat stopped, and never those of a live one', async () => {
    const org = await prepaidOrg('heartbeat');
    const dead = await crashedHold(org.id, 'node-x', DEAD_AFTER_MS + 5_000, 400_000n);
    const live = await crashedHold(org.id, 'node-y', 1_000, 100_000n);
    // What the next heartbeat of any instance does.
    await (platform.services.billing.reservations as unknown as { incarnations: { beat(): Promise<void> } }).incarnations.beat();
    expect(await platform.services.billing.reservations.reconcile(RESERVATION_TTL_MS)).toBe(1);
    expect(await outcome(dead)).toBe('released');
    expect(await outcome(live)).toBeNull();
    expect((await platform.services.billing.accounts.account(org.id)).reservedMicros).toBe(100_000n);
  });

  it('releases rows and counters in one statement (every later statement fails here): the holds released, the counter back, nothing charged', async () => {
    const org = await prepaidOrg('atomic');
    const holds = [await crashedHold(org.id, 'node-z', 0, 300_000n), await crashedHold(org.id, 'node-z', 0, 200_000n)];
    expect((await platform.services.billing.accounts.account(org.id)).reservedMicros).toBe(500_000n);
    const client = prisma();
    // Every statement after the first fails, as a connection lost midway would.
    let statements = 0;
    const originals = { query: client.$queryRaw, execute: client.$executeRaw };
    const failAfterFirst = <F extends (...args: never[]) => unknown>(fn: F) =>
      ((...args: Parameters<F>) => (++statements > 1 ? Promise.reject(new Error('connection lost')) : fn.apply(client, args))) as unknown as F;
    Object.assign(client, { $queryRaw: failAfterFirst(originals.query), $executeRaw: failAfterFirst(originals.execute) });
    let released: number;
    try {
      released = await platform.services.billing.reservations.reconcile(0);
    } finally {
      Object.assign(client, { $queryRaw: originals.query, $executeRaw: originals.execute });
    }
    // The one statement released both holds (and any other open one: the age limit is 0)...
    expect(statements).toBe(1);
    expect(released).toBeGreaterThanOrEqual(2);
    expect(await Promise.all(holds.map(outcome))).toEqual(['released', 'released']);
    // ...and took them off the counter, charging nothing.
    const account = await client.billingAccount.findUniqueOrThrow({ where: { organizationId: org.id } });
    expect(account.reservedMicros).toBe(0n);
    expect(account.balanceMicros).toBe(1_000_000n);
    expect(await platform.services.billing.accounts.credit.balance(org.id)).toBe(1_000_000n);
  });
});

function chat(platform: TestPlatform, org: TestOrg) {
  return platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) });
}
