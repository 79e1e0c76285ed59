// The figures bench/sdk.ts prints: a difference carries one sign (never `+-3`), and an
// added time is judged against the target as printed.
import { describe, expect, it } from 'vitest';
import { againstTarget, median, signed } from '../../bench/figures.js';

describe('bench figures', () => {
  it('prints a difference with its own sign', () => {
    expect([12.4, 0.3, -0.3, -3.2, -120.6].map(signed)).toEqual(['+12', '0', '0', '-3', '-121']);
  });

  it('takes the median of the rounds', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(3);
  });

  it('marks an added time MEETS up to the target and OVER beyond it, as printed', () => {
    expect([12.2, 99.6, 100.4, 100.6, -4].map((added) => againstTarget(added, 100))).toEqual(['+12 µs MEETS', '+100 µs MEETS', '+100 µs MEETS', '+101 µs OVER', '-4 µs MEETS']);
  });
});
