// Contract-valid values from a JSON schema, drawn from a seeded PRNG and guided by the
// contract's examples (so most requests get past routing rules the schema cannot express),
// with every generated node recorded so a mutation can break exactly one of them.
import { deref } from '../../../scripts/codegen/contract.js';
import { contractDocument } from '../contract.js';
import type { Random } from './random.js';

export type Json = Record<string, any>;
export type JsonPath = (string | number)[];

/** A generated value's location and the (flattened) schema it was generated from. */
export interface SchemaNode {
  path: JsonPath;
  schema: Json;
}

export const resolve = (node: Json): Json => deref(contractDocument, node);

/** Below this depth only required properties and minimum array lengths are generated. */
const SHALLOW_DEPTH = 4;

/** `allOf` merged and one `oneOf` branch chosen, so the rest of the generator sees one plain schema. */
function flatten(schema: Json, random: Random): Json {
  const { allOf, oneOf, ...rest } = resolve(schema);
  let merged: Json = rest;
  for (const part of [...(allOf ?? []), ...(oneOf ? [random.pick(oneOf)] : [])]) {
    const p = flatten(part, random);
    merged = {
      ...merged,
      ...p,
      properties: { ...merged.properties, ...p.properties },
      required: [...(merged.required ?? []), ...(p.required ?? [])],
    };
  }
  return merged;
}

/** The schema's type, with `null` chosen rarely when the type is a list that allows it. */
function typeOf(s: Json, random: Random): string {
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const concrete = types.filter((t) => t !== 'null');
  if (concrete.length === 0) return types[0] ?? (s.properties ? 'object' : s.items ? 'array' : 'string');
  return types.includes('null') && random.chance(0.1) ? 'null' : random.pick(concrete);
}

export function uuidFrom(random: Random): string {
  const hex = Array.from({ length: 32 }, () => random.int(0, 15).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

const WORDS = ['grace', 'hope', 'faith', 'psalm', 'light', 'bread', 'river', 'stone', 'shepherd', 'vine'];

function stringFor(s: Json, random: Random): string {
  if (s.format === 'uuid') return uuidFrom(random);
  if (s.format === 'date-time') return new Date(Date.UTC(2020 + random.int(0, 6), random.int(0, 11), random.int(1, 28))).toISOString();
  if (s.format === 'binary') return 'binary';
  const min = s.minLength ?? 1;
  const max = Math.max(min, Math.min(s.maxLength ?? min + 24, min + 24));
  let text = random.pick(WORDS);
  while (text.length < min) text += ` ${random.pick(WORDS)}`;
  return text.slice(0, random.int(Math.min(min, text.length), Math.min(max, text.length)));
}

function numberFor(s: Json, random: Random, integer: boolean): number {
  const min = s.minimum ?? 0;
  const max = s.maximum ?? min + 100;
  return integer ? random.int(Math.ceil(min), Math.floor(max)) : min + random.next() * (max - min);
}

/**
 * A value valid against `schema` (as far as the schema alone says), with its nodes appended
 * to `nodes`. `example` is the contract's example for the same location: leaves take it
 * most of the time.
 */
export function generate(schema: Json, random: Random, nodes: SchemaNode[], path: JsonPath = [], example?: unknown): unknown {
  const s = flatten(schema, random);
  nodes.push({ path, schema: s });
  const hint = example ?? s.example;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return random.pick(s.enum);
  const type = typeOf(s, random);
  const depth = path.length;
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return typeof hint === 'boolean' && random.chance(0.5) ? hint : random.chance(0.5);
    case 'integer':
    case 'number':
      return typeof hint === 'number' && random.chance(0.6) ? hint : numberFor(s, random, type === 'integer');
    case 'string':
      return typeof hint === 'string' && random.chance(0.7) ? hint : stringFor(s, random);
    case 'array': {
      const hints = Array.isArray(hint) ? hint : [];
      const min = s.minItems ?? 0;
      const max = depth >= SHALLOW_DEPTH ? min : Math.min(s.maxItems ?? min + 3, Math.max(min, hints.length) + 2);
      const length = hints.length > 0 && random.chance(0.6) ? Math.min(Math.max(hints.length, min), max) : random.int(min, max);
      return Array.from({ length }, (_, i) => generate(s.items ?? {}, random, nodes, [...path, i], hints[i % (hints.length || 1)]));
    }
    default: {
      const hints = (hint && typeof hint === 'object' ? hint : {}) as Json;
      const required = new Set<string>(s.required ?? []);
      const value: Json = {};
      for (const [name, property] of Object.entries<Json>(s.properties ?? {})) {
        const wanted = required.has(name) || (depth < SHALLOW_DEPTH && random.chance(name in hints ? 0.8 : 0.3));
        if (wanted) value[name] = generate(property, random, nodes, [...path, name], hints[name]);
      }
      return value;
    }
  }
}

export const REMOVE = Symbol('remove');

/** A copy of `value` with the node at `path` replaced by `replacement`, or removed when it is `REMOVE`. */
export function replaceAt(value: unknown, path: JsonPath, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as Json) };
  const next = replaceAt(copy[head], rest, replacement);
  if (next === REMOVE) {
    if (Array.isArray(copy)) copy.splice(Number(head), 1);
    else delete copy[head];
  } else {
    copy[head] = next;
  }
  return copy;
}
