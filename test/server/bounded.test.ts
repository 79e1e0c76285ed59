// Bounded copies (server/bounded.ts): what a 422 quotes and a log line carries keeps the
// value's shape and stays within its budget, however big or deep the value.
import { describe, expect, it } from 'vitest';
import { bounded, cut, type Bounds } from '../../server/bounded.js';

const BOUNDS: Bounds = { total: 256, string: 100, depth: 4 };
/** What a copy may pass its total by: the last number or marker that did not fit. */
const SLACK = 32;
const size = (value: unknown) => JSON.stringify(value).length;

describe('cut', () => {
  it('keeps a short text and marks a cut one', () => {
    expect(cut('grace', 5)).toBe('grace');
    expect(cut('grace and peace', 6)).toBe('grace…');
  });

  it('never splits a surrogate pair', () => {
    const cutText = cut('ab\u{1F64F}cd', 4);
    expect(cutText).toBe('ab…');
  });
});

describe('bounded', () => {
  it('returns small values as they are', () => {
    const value = { model: 'local-chat', n: 3, ok: true, none: null, list: ['a', 1] };
    expect(bounded(value, BOUNDS)).toEqual(value);
    expect(bounded('short', BOUNDS)).toBe('short');
    expect(bounded(42, BOUNDS)).toBe(42);
  });

  it('cuts a long string to the string bound', () => {
    const copy = bounded('x'.repeat(9_000_000), BOUNDS) as string;
    expect(copy).toHaveLength(BOUNDS.string);
    expect(copy.endsWith('…')).toBe(true);
  });

  it('keeps the first elements of a huge array, as an array within the total', () => {
    const copy = bounded(Array(100_000).fill(1), BOUNDS) as number[];
    expect(Array.isArray(copy)).toBe(true);
    expect(copy.length).toBeGreaterThan(50);
    expect(copy.every((n) => n === 1)).toBe(true);
    expect(size(copy)).toBeLessThanOrEqual(BOUNDS.total + SLACK);
  });

  it('keeps the first members of a huge object, with long keys cut', () => {
    const huge = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`key${i}`, 'v'.repeat(50)]));
    const copy = bounded(huge, BOUNDS) as Record<string, string>;
    expect(Object.keys(copy)[0]).toBe('key0');
    expect(size(copy)).toBeLessThanOrEqual(BOUNDS.total + SLACK);
    const longKey = bounded({ ['k'.repeat(5_000)]: 1 }, BOUNDS) as Record<string, number>;
    expect(Object.keys(longKey)[0]).toHaveLength(BOUNDS.string);
  });

  it('copies containers below the depth bound empty, keeping their type', () => {
    expect(bounded([[[[[['deep']]]]]], BOUNDS)).toEqual([[[[[]]]]]);
    expect(bounded({ a: { b: { c: { d: { e: 1 } } } } }, BOUNDS)).toEqual({ a: { b: { c: { d: {} } } } });
  });

  it('stops on a cycle and on 100,000 levels of nesting', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    expect(size(bounded(cyclic, BOUNDS))).toBeLessThanOrEqual(BOUNDS.total + SLACK);
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    expect(bounded(deep, BOUNDS)).toEqual([[[[[]]]]]);
    const selfish = { name: 'me', toJSON() { return this; } };
    expect(bounded(selfish, BOUNDS)).toEqual({ name: 'me' });
  });

  it('sees values as JSON does: a date as its text, no undefined or function members', () => {
    expect(bounded({ at: new Date(0), gone: undefined, fn: () => 1 }, BOUNDS)).toEqual({ at: '1970-01-01T00:00:00.000Z' });
  });

  it('spends one budget over the whole value', () => {
    const copy = bounded({ a: 'x'.repeat(200), b: 'y'.repeat(200), c: 'z'.repeat(200) }, BOUNDS) as Record<string, string>;
    expect(copy.a).toHaveLength(BOUNDS.string);
    expect(size(copy)).toBeLessThanOrEqual(BOUNDS.total + SLACK);
  });
});
