// Bounded copies of values a caller or an upstream chose: what a 422 quotes back
// (http/errors/render.ts) and what a log line carries (logging.ts). A copy keeps the value's shape
// (a string stays a string, an array an array, an object keeps its first members) and stops
// once its budget is spent, so making it costs no more for a 9 MB value than for a short one.

export interface Bounds {
  /** Characters of the whole copy, counted roughly as its JSON (text, keys, punctuation). */
  total: number;
  /** Characters of any one string or key; a longer one is cut and ends with `…`. */
  string: number;
  /** Levels of arrays and objects kept; a deeper one is copied empty. */
  depth: number;
}

/** `value` within `bounds` (the value itself when it is a short string or a primitive). */
export function bounded(value: unknown, bounds: Bounds): unknown {
  return copy(value, bounds, { left: bounds.total }, 0);
}

/** `text` cut to `max` characters, the cut marked with `…` (never splitting a surrogate pair). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(max - 1, 0);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

interface Budget {
  left: number;
}

function copy(value: unknown, bounds: Bounds, budget: Budget, depth: number): unknown {
  if (typeof value === 'string') {
    const text = cut(value, Math.min(bounds.string, Math.max(budget.left - 2, 1)));
    budget.left -= text.length + 2;
    return text;
  }
  if (value === null || typeof value !== 'object') {
    budget.left -= typeof value === 'number' || typeof value === 'boolean' ? String(value).length : 4;
    return value;
  }
  // As JSON.stringify would see it: a Date as its text, a Buffer as its bytes.
  const json = (value as { toJSON?: unknown }).toJSON;
  if (typeof json === 'function') {
    const plain: unknown = json.call(value);
    if (plain !== value) return copy(plain, bounds, budget, depth);
  }
  budget.left -= 2;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    if (depth >= bounds.depth) return out;
    for (let i = 0; i < value.length && budget.left > 0; i++) {
      out.push(copy(value[i], bounds, budget, depth + 1));
      budget.left -= 1;
    }
    return out;
  }
  const out: Record<string, unknown> = {};
  if (depth >= bounds.depth) return out;
  for (const key in value) {
    if (budget.left <= 0) break;
    if (!Object.hasOwn(value, key)) continue;
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined || typeof member === 'function') continue;
    const name = cut(key, Math.min(bounds.string, Math.max(budget.left - 3, 1)));
    budget.left -= name.length + 3;
    out[name] = copy(member, bounds, budget, depth + 1);
  }
  return out;
}
