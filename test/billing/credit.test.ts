import { describe, expect, it } from 'vitest';
import { formatUsd, usdToMicros } from '../../server/billing/credit.js';

describe('credit amounts', () => {
  it('parse US dollars exactly, to the micro-dollar', () => {
    expect(usdToMicros('12.50')).toBe(12_500_000n);
    expect(usdToMicros('0.000001')).toBe(1n);
    expect(usdToMicros('3')).toBe(3_000_000n);
    for (const bad of ['', '-1', '1.2345678', 'ten', '1e3', '0x10']) expect(usdToMicros(bad), bad).toBeNull();
  });

  it('format to cents, rounding half up', () => {
    expect(formatUsd(12_500_000n)).toBe('$12.50');
    expect(formatUsd(1_005_000n)).toBe('$1.01');
    expect(formatUsd(0n)).toBe('$0.00');
  });
});
