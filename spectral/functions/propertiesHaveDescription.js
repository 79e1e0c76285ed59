// Every property of a component schema (nested objects, array items and
// allOf/oneOf/anyOf members included) has a non-empty `description`: a property
// a user fills or reads must say what it means. Run unresolved, so a `$ref`
// property needs its own `description` beside the `$ref` (OAS 3.1 allows it).
import { createRulesetFunction } from '@stoplight/spectral-core';

const NESTED = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains'];
const LISTS = ['allOf', 'oneOf', 'anyOf', 'prefixItems'];

function walk(schema, path, results) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const at = [...path, 'properties', name];
    if (!property || typeof property !== 'object') continue;
    if (typeof property.description !== 'string' || property.description.trim() === '') {
      results.push({ message: `Property "${name}" has no description.`, path: at });
    }
    walk(property, at, results);
  }
  for (const key of NESTED) walk(schema[key], [...path, key], results);
  for (const key of LISTS) (schema[key] ?? []).forEach((member, i) => walk(member, [...path, key, i], results));
}

export default createRulesetFunction({ input: { type: 'object' }, options: null }, function propertiesHaveDescription(schema, _opts, context) {
  const results = [];
  walk(schema, context.path, results);
  return results;
});
