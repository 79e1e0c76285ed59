import type { UsageLine } from '../../billing/accounts.js';

/** A usage line's figures as the contract's `UsageTotals` (micros as numbers). */
export const usageTotals = (l: UsageLine) => ({
  calls: l.calls,
  inputTokens: l.inputTokens,
  outputTokens: l.outputTokens,
  costMicros: Number(l.costMicros),
  billedMicros: Number(l.billedMicros),
});
