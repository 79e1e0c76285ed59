// What a step added to the usage meter. Unmetered usage is rolled up per second
// (server/billing/usage-buffer.ts): the requests of a test and of the test before it may
// share a row, and a shared row has no trace id, so tests count what the rows gained, never rows.
import { expect, vi } from 'vitest';
import type { Prisma } from '../../generated/prisma/client.js';
import type { RunningPlatform } from '../../server/server.js';

export interface UsageAdded {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  costMicros: bigint;
  billedMicros: bigint;
}

/** Sums the rows `where` selects now; `added(calls)` waits until `calls` more requests settled under it and returns what they added. */
export async function meter(platform: Pick<RunningPlatform, 'services'>, where: Prisma.UsageRecordWhereInput) {
  const { billing, database } = platform.services;
  const total = async (): Promise<UsageAdded> => {
    // Settlements run once a response has closed; drain waits for them and writes the buffered rows.
    await billing.reservations.drain();
    const { _sum: sum } = await database.prisma.usageRecord.aggregate({ where, _sum: { calls: true, inputTokens: true, outputTokens: true, costMicros: true, billedMicros: true } });
    return { calls: sum.calls ?? 0, inputTokens: sum.inputTokens ?? 0, outputTokens: sum.outputTokens ?? 0, costMicros: sum.costMicros ?? 0n, billedMicros: sum.billedMicros ?? 0n };
  };
  const before = await total();
  return {
    async added(calls: number): Promise<UsageAdded> {
      const after = await vi.waitFor(
        async () => {
          const now = await total();
          expect(now.calls - before.calls).toBeGreaterThanOrEqual(calls);
          return now;
        },
        { timeout: 10_000, interval: 20 },
      );
      const added = {
        calls: after.calls - before.calls,
        inputTokens: after.inputTokens - before.inputTokens,
        outputTokens: after.outputTokens - before.outputTokens,
        costMicros: after.costMicros - before.costMicros,
        billedMicros: after.billedMicros - before.billedMicros,
      };
      expect(added.calls, 'requests settled under the meter').toBe(calls);
      return added;
    },
  };
}
