// Builds a small JSON value that validates against a JSON schema: what the local model puts
// in tool-call arguments and json_schema answers. Required properties only, enums' hinted
// or first value, bounds respected; string (and number) values come from a caller's hint when it has
// one. Covered: type (and type lists), const, enum, default, properties/required, items,
// prefixItems, min/maxItems, min/maxLength, numeric bounds, multipleOf, common formats,
// anyOf/oneOf (first branch), allOf (merged), local $ref. Not covered: pattern,
// uniqueItems, dependent schemas, if/then/else.

type Schema = Record<string, unknown>;

/** A value for the property `name` (a path like `location` or `address.city`), if known. */
export type Hint = (name: string, schema: Schema) => string | undefined;

const FORMATS: Record<string, string> = {
  'date-time': '1970-01-01T00:00:00Z',
  date: '1970-01-01',
  time: '00:00:00Z',
  email: 'user@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  ipv4: '127.0.0.1',
};

const MAX_DEPTH = 32;

export function instanceOf(schema: Schema, hint: Hint = () => undefined): unknown {
  return build(schema, '', 0, schema, hint);
}

function build(schema: Schema, name: string, depth: number, root: Schema, hint: Hint): unknown {
  if (depth > MAX_DEPTH) return null;
  const at = (sub: unknown, subName = name) => build(asSchema(sub), subName, depth + 1, root, hint);

  if (typeof schema.$ref === 'string') return at(resolve(root, schema.$ref));
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    // The value the caller hints at when it is one of the options, else the first option.
    const hinted = hint(name, schema)?.toLowerCase();
    return schema.enum.find((option) => typeof option === 'string' && option.toLowerCase() === hinted) ?? schema.enum[0];
  }
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.allOf)) return at(merge(schema, schema.allOf.map(asSchema)));
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches) && branches.length > 0) return at({ ...withoutKeys(schema, ['anyOf', 'oneOf']), ...asSchema(branches[0]) });

  switch (typeOf(schema)) {
    case 'object': {
      const properties = asSchema(schema.properties);
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
      const object: Record<string, unknown> = {};
      for (const key of required) object[key] = at(properties[key] ?? {}, name ? `${name}.${key}` : key);
      return object;
    }
    case 'array': {
      const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
      const count = Math.max(Number(schema.minItems ?? 0), 0);
      return Array.from({ length: count }, (_, i) => at(i < prefix.length ? prefix[i] : (schema.items ?? {})));
    }
    case 'string':
      return stringValue(schema, hint(name, schema));
    case 'integer':
    case 'number':
      return numberValue(schema, hint(name, schema));
    case 'boolean':
      return false;
    default:
      return null;
  }
}

function typeOf(schema: Schema): string | undefined {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') ?? schema.type[0] : schema.type;
  if (typeof type === 'string') return type;
  if ('properties' in schema || 'required' in schema) return 'object';
  if ('items' in schema || 'prefixItems' in schema) return 'array';
  return undefined;
}

function stringValue(schema: Schema, hinted: string | undefined): string {
  const format = typeof schema.format === 'string' ? FORMATS[schema.format] : undefined;
  const min = Number(schema.minLength ?? 0);
  const max = Number(schema.maxLength ?? Infinity);
  // Length counts code points, as JSON Schema does.
  const chars = [...(format ?? hinted ?? '')].slice(0, max);
  while (chars.length < min) chars.push('x');
  return chars.join('');
}

function numberValue(schema: Schema, hinted: string | undefined): number {
  const integer = typeOf(schema) === 'integer';
  const step = typeof schema.multipleOf === 'number' ? schema.multipleOf : integer ? 1 : undefined;
  const low = bound(schema.minimum, schema.exclusiveMinimum, 1, step);
  const high = bound(schema.maximum, schema.exclusiveMaximum, -1, step);
  const parsed = hinted === undefined ? NaN : Number(hinted);
  let value = Number.isFinite(parsed) ? parsed : 0;
  if (value < low || value > high) value = Number.isFinite(low) ? (Number.isFinite(high) ? (low + high) / 2 : low) : high;
  if (step !== undefined) {
    const snapped = Math.ceil(value / step) * step;
    value = snapped <= high ? snapped : Math.floor(value / step) * step;
  }
  return value;
}

/** The tightest inclusive bound; an exclusive one moves inward by one step (or a hair). */
function bound(inclusive: unknown, exclusive: unknown, direction: 1 | -1, step: number | undefined): number {
  const limits = [typeof inclusive === 'number' ? inclusive : direction * -Infinity];
  if (typeof exclusive === 'number') {
    const inward = step ?? Math.max(Math.abs(exclusive) * 1e-6, 1e-6);
    limits.push(exclusive + direction * inward);
  }
  return direction === 1 ? Math.max(...limits) : Math.min(...limits);
}

function merge(schema: Schema, parts: Schema[]): Schema {
  const merged: Schema = withoutKeys(schema, ['allOf']);
  for (const part of parts) {
    const { properties, required, ...rest } = part;
    Object.assign(merged, rest);
    merged.properties = { ...asSchema(merged.properties), ...asSchema(properties) };
    merged.required = [...new Set([...((merged.required as string[]) ?? []), ...((required as string[]) ?? [])])];
  }
  return merged;
}

function resolve(root: Schema, ref: string): unknown {
  if (!ref.startsWith('#')) return {};
  return ref
    .slice(1)
    .split('/')
    .filter(Boolean)
    .map((token) => decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, key) => asSchema(node)[key], root);
}

function withoutKeys(schema: Schema, keys: string[]): Schema {
  return Object.fromEntries(Object.entries(schema).filter(([key]) => !keys.includes(key)));
}

function asSchema(value: unknown): Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Schema) : {};
}
