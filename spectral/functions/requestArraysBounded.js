// Every array a caller sends (request bodies and parameters, nested ones included) has a
// `maxItems`: an unbounded list reaches the database as one bind parameter per item, and
// PostgreSQL takes at most 32,767 per query. Run resolved; a schema reached twice (a
// recursive one) is walked once.
import { createRulesetFunction } from '@stoplight/spectral-core';

const NESTED = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains'];
const LISTS = ['allOf', 'oneOf', 'anyOf', 'prefixItems'];

function walk(schema, path, results, seen) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema) || seen.has(schema)) return;
  seen.add(schema);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if ((types.includes('array') || schema.items !== undefined) && typeof schema.maxItems !== 'number') {
    results.push({ message: 'A request array needs a `maxItems` the database can take (at most 32,766 items).', path });
  }
  for (const [name, property] of Object.entries(schema.properties ?? {})) walk(property, [...path, 'properties', name], results, seen);
  for (const key of NESTED) walk(schema[key], [...path, key], results, seen);
  for (const key of LISTS) (schema[key] ?? []).forEach((member, i) => walk(member, [...path, key, i], results, seen));
}

export default createRulesetFunction({ input: { type: 'object' }, options: null }, function requestArraysBounded(schema, _opts, context) {
  const results = [];
  walk(schema, context.path, results, new Set());
  return results;
});
