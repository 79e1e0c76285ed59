// Prepaid credit: an append-only ledger per organization, with its running balance kept on
// the organization's billing account (billing-service.ts) so that admission is one
// conditional UPDATE. Every ledger write goes through here or the billing service.
import type { PrismaClient } from '../../generated/prisma/client.js';

export const MICROS_PER_USD = 1_000_000n;

export interface CreditEntry {
  id: string;
  amountMicros: bigint;
  reason: string;
  createdAt: Date;
  /** The balance right after this entry. */
  balanceMicros: bigint;
}

export class CreditService {
  constructor(private readonly prisma: PrismaClient) {}

  /** Appends a credit; answers the ledger entry and the account's balance right after it. */
  async add(organizationId: string, amountMicros: bigint, reason: string): Promise<CreditEntry> {
    if (amountMicros <= 0n) throw new RangeError('credit must be positive');
    // The account exists before the ledger row, so its balance (started from the ledger's
    // sum when it was created) counts the new row exactly once.
    await ensureBillingAccount(this.prisma, organizationId);
    const [entry, account] = await this.prisma.$transaction([
      this.prisma.creditLedger.create({ data: { organizationId, amountMicros, reason } }),
      this.prisma.billingAccount.update({ where: { organizationId }, data: { balanceMicros: { increment: amountMicros }, version: { increment: 1 } } }),
    ]);
    return { id: entry.id, amountMicros, reason, createdAt: entry.createdAt, balanceMicros: account.balanceMicros };
  }

  async balance(organizationId: string): Promise<bigint> {
    const total = await this.prisma.creditLedger.aggregate({ where: { organizationId }, _sum: { amountMicros: true } });
    return total._sum.amountMicros ?? 0n;
  }
}

/** Creates the organization's billing account on first need, its balance taken from the ledger. */
export async function ensureBillingAccount(prisma: PrismaClient, organizationId: string): Promise<void> {
  await prisma.$executeRaw`
    INSERT INTO billing_accounts (organization_id, balance_micros)
    SELECT ${organizationId}::uuid, COALESCE((SELECT SUM(amount_micros) FROM credit_ledger WHERE organization_id = ${organizationId}::uuid), 0)
    ON CONFLICT (organization_id) DO NOTHING`;
}

/** "12.5" → 12_500_000 micro-dollars, exactly (no floating point). */
export function usdToMicros(usd: string): bigint | null {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(usd.trim());
  if (!match) return null;
  return BigInt(match[1]) * MICROS_PER_USD + BigInt((match[2] ?? '').padEnd(6, '0'));
}

export function formatUsd(micros: bigint): string {
  const negative = micros < 0n;
  const cents = ((negative ? -micros : micros) + 5_000n) / 10_000n;
  return `${negative ? '-' : ''}$${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}
