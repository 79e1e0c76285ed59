// A crash between reserve and settle: the hold stays in the database (the record), and the
// next start on the same data releases it without charging, so the credit it held is
// available again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform } from '../support/platform.js';
import { ask, createOrg, pricedCatalog } from './support.js';

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
    await billing.setMode(org.id, 'prepaid');
    await billing.credit.add(org.id, 1_000_000n, 'test');
    // A request admitted (its hold written) whose instance dies before it settles.
    const hold = await billing.reserve({ organizationId: org.id, apiKeyId: org.keyId, operation: 'createGuardedChatCompletion', model: 'priced', product: null, estimateMicros: 900_000n, traceId: 'trc_crashed' });
    expect((await billing.account(org.id)).reservedMicros).toBe(900_000n);
    expect((await first.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status).toBe(402);
    const adminKey = first.adminKey;
    await first.close();

    const second = await startTestPlatform({ dataDir, logLevel: 'silent' }, { catalog: pricedCatalog() }, { adminKey });
    try {
      const row = await second.services.database.prisma.billingReservation.findUniqueOrThrow({ where: { id: hold.id } });
      expect(row.outcome).toBe('released');
      expect(row.settledAt).not.toBeNull();
      const account = await second.services.billing.account(org.id);
      expect(account.reservedMicros).toBe(0n);
      expect(account.balanceMicros).toBe(1_000_000n);
      expect(await second.services.billing.credit.balance(org.id)).toBe(1_000_000n);
      // The credit it held serves requests again.
      expect((await second.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })).status).toBe(200);
    } finally {
      await second.close();
    }
  }, 120_000);
});
