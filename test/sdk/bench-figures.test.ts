// The figures bench/sdk.ts prints: a difference carries one sign (never `+-3`).
import { describe, expect, it } from 'vitest';
import { median, signed } from '../../bench/figures.js';

describe('bench figures', () => {
  it('prints a difference with its own sign', () => {
    expect([12.4, 0.3, -0.3, -3.2, -120.6].map(signed)).toEqual(['+12', '0', '0', '-3', '-121']);
  });

  it('takes the median of the rounds', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(3);
  });
});
