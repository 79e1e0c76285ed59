// The awkward inputs the mutations draw from: text that breaks naive string handling, and
// values that look plausible to a parser but are not what the contract allows.

/** Strings that are valid JSON text but hard on everything after the parser. */
export const ODD_STRINGS: readonly string[] = [
  '\u202Egnp.exe', // right-to-left override
  '\u200F\u05E9\u05DC\u05D5\u05DD\u200E', // RTL/LTR marks around Hebrew
  '\u{1D573}\u{1D58A}\u{1D591}\u{1D591}\u{1D594} \u{1F64F}\u{1F3FD}', // astral plane letters, emoji with a skin tone
  '\uD800', // lone high surrogate: JSON.stringify writes it as the escape \ud800
  'x\uDFFFy', // lone low surrogate
  'Z\u0335\u0322\u031Ba\u0334l\u0337g\u0336o', // stacked combining marks
  '\uFEFFbom',
  '\u0000', // NUL, written as the escape \u0000
  'a\u0000b',
  '\\u0000', // the six characters of an escape, not a NUL
  '\u2028\u2029', // JavaScript line terminators
  '',
  ' ',
  "'; DROP TABLE items; --",
  '{{7*7}}${7*7}',
  '../../../../etc/passwd',
];

/**
 * A pagination cursor in the server's format (server/storage/pagination.ts: base64url of
 * `<ISO date>|<uuid>`), for any date text, including ones no Date can hold.
 */
export const cursorOf = (isoDate: string, id: string): string => Buffer.from(`${isoDate}|${id}`, 'utf8').toString('base64url');

const SOME_UUID = '00000000-0000-4000-8000-000000000000';

/** Dates that parse as RFC 3339 (or as JavaScript dates) but that the database cannot store, or that no Date holds. */
const UNSTORABLE_DATES: readonly string[] = [
  '2016-12-31T23:59:60Z', // a leap second: valid RFC 3339, no JavaScript Date
  '0000-01-01T00:00:00Z', // year 0: a JavaScript Date, refused by PostgreSQL
  '0000-01-01T00:00:00.000Z',
  '-000001-01-01T00:00:00.000Z',
  '-271821-04-20T00:00:00.000Z',
  '+275760-09-13T00:00:00.000Z',
  '10000-01-01T00:00:00Z',
];

export const BAD_CURSORS: readonly string[] = [
  'garbage',
  '!!!',
  Buffer.from('garbage').toString('base64'),
  ...UNSTORABLE_DATES.map((date) => cursorOf(date, SOME_UUID)),
  cursorOf('2024-13-45T25:61:00Z', SOME_UUID),
  cursorOf('2024-01-01T00:00:00.000Z', 'not-a-uuid'),
  cursorOf('2024-01-01T00:00:00.000Z', `${SOME_UUID}|extra`),
  cursorOf('', ''),
  Buffer.from('{"id":"x","ts":"9999-12-31T23:59:59Z"}').toString('base64url'),
  Buffer.from('\u0000\u0001\u0002').toString('base64'),
  'A'.repeat(4096),
  '%00',
];

export const BAD_DATES: readonly string[] = [
  ...UNSTORABLE_DATES,
  '2024-13-45T25:61:00Z',
  '0000-00-00T00:00:00Z',
  'yesterday',
  '9999-12-31T23:59:59Z',
  '1969-12-31T23:59:59.999999999Z',
  '2024-02-30',
  '',
];

/** More items than PostgreSQL takes as bind parameters of one query (32,767). */
export const OVER_PARAMETER_LIMIT = 32_768;

/** Values of every JSON type, for replacing a node with one of another type. */
export const TYPED_VALUES: readonly unknown[] = [0, -1, 1.5, 'text', true, false, null, [], {}, [1, 'two'], { nested: { deeper: [] } }];

export const jsonType = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;

/** JSON text of arrays nested `depth` deep: a stack-depth test for every recursive walker of the body. */
export const deeplyNested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
