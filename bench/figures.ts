// Figures of the benchmarks' tables.

/** The middle value (the upper one of an even count). */
export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A difference, rounded, with its sign: `+12`, `-3`, `0`. */
export function signed(value: number): string {
  const rounded = Math.round(value);
  return rounded > 0 ? `+${rounded}` : rounded < 0 ? `-${-rounded}` : '0';
}

/** Added µs per call against a target: `+12 µs MEETS`, `+140 µs OVER` (judged on the figure as printed). */
export function againstTarget(addedUs: number, targetUs: number): string {
  return `${signed(addedUs)} µs ${Math.round(addedUs) <= targetUs ? 'MEETS' : 'OVER'}`;
}
