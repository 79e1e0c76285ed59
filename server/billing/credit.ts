// Prepaid credit: an append-only ledger per organization. The billing gate (402
// INSUFFICIENT_CREDIT) and usage settlement build on it.
import type { PrismaClient } from '../../generated/prisma/client.js';

export const MICROS_PER_USD = 1_000_000n;

export class CreditService {
  constructor(private readonly prisma: PrismaClient) {}

  async add(organizationId: string, amountMicros: bigint, reason: string): Promise<bigint> {
    if (amountMicros <= 0n) throw new RangeError('credit must be positive');
    await this.prisma.creditLedger.create({ data: { organizationId, amountMicros, reason } });
    return this.balance(organizationId);
  }

  async balance(organizationId: string): Promise<bigint> {
    const total = await this.prisma.creditLedger.aggregate({ where: { organizationId }, _sum: { amountMicros: true } });
    return total._sum.amountMicros ?? 0n;
  }
}

/** "12.5" → 12_500_000 micro-dollars, exactly (no floating point). */
export function usdToMicros(usd: string): bigint | null {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(usd.trim());
  if (!match) return null;
  return BigInt(match[1]) * MICROS_PER_USD + BigInt((match[2] ?? '').padEnd(6, '0'));
}

export function formatUsd(micros: bigint): string {
  const cents = (micros + 5_000n) / 10_000n;
  return `$${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}
