// Figures of the benchmarks' tables.

/** The middle value (the upper one of an even count). */
export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A difference, rounded, with its sign: `+12`, `-3`, `0`. */
export function signed(value: number): string {
  const rounded = Math.round(value);
  return rounded > 0 ? `+${rounded}` : rounded < 0 ? `-${-rounded}` : '0';
}
