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

export const BAD_CURSORS: readonly string[] = [
  'garbage',
  '!!!',
  Buffer.from('garbage').toString('base64'),
  Buffer.from('{"id":"x","ts":"9999-12-31T23:59:59Z"}').toString('base64url'),
  Buffer.from('{"id":"x","ts":"0001-01-01T00:00:00Z"}').toString('base64url'),
  Buffer.from(JSON.stringify({ createdAt: '+275760-09-13T00:00:00.000Z', id: '00000000-0000-0000-0000-000000000000' })).toString('base64url'),
  Buffer.from('\u0000\u0001\u0002').toString('base64'),
  'A'.repeat(4096),
  '%00',
];

export const BAD_DATES: readonly string[] = [
  '2024-13-45T25:61:00Z',
  '0000-00-00T00:00:00Z',
  'yesterday',
  '+275760-09-13T00:00:00.000Z',
  '9999-12-31T23:59:59Z',
  '1969-12-31T23:59:59.999999999Z',
  '2024-02-30',
  '',
];

/** Values of every JSON type, for replacing a node with one of another type. */
export const TYPED_VALUES: readonly unknown[] = [0, -1, 1.5, 'text', true, false, null, [], {}, [1, 'two'], { nested: { deeper: [] } }];

export const jsonType = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;

/** JSON text of arrays nested `depth` deep: a stack-depth test for every recursive walker of the body. */
export const deeplyNested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
