// Every property of a component schema (nested objects, array items and
// allOf/oneOf/anyOf members included) has a description that says what it means
// to the user who fills or reads it: non-empty, and more than its own name again
// ("Tags." on `item_tags`, "The agent." on AgentResponse.data). Run unresolved, so
// a `$ref` property needs its own `description` beside the `$ref` (OAS 3.1 allows it).
import { createRulesetFunction } from '@stoplight/spectral-core';

const NESTED = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains'];
const LISTS = ['allOf', 'oneOf', 'anyOf', 'prefixItems'];
/** Words that add nothing to a name: "The generated text.", "The key record." */
const FILLER = new Set(['the', 'a', 'an', 'generated', 'enriched', 'record']);

/** Lower-case words of a name or text (camelCase, snake_case, spaces), singular. */
const words = (text) =>
  text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .map((w) => (w.length > 3 && w.endsWith('s') ? w.slice(0, -1) : w));

/** The description only repeats names the reader already sees: the property's, its schema's, its `$ref` target's. */
function restatesName(description, names) {
  const known = new Set(names.flatMap(words));
  const said = words(description).filter((w) => !FILLER.has(w));
  return said.length > 0 && said.every((w) => known.has(w));
}

function walk(schema, path, schemaName, results) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const at = [...path, 'properties', name];
    if (!property || typeof property !== 'object') continue;
    const description = property.description;
    if (typeof description !== 'string' || description.trim() === '') {
      results.push({ message: `Property "${name}" has no description.`, path: at });
    } else if (restatesName(description, [name, schemaName, typeof property.$ref === 'string' ? property.$ref.split('/').pop() : ''])) {
      results.push({ message: `Property "${name}": "${description}" only repeats its name; say what it means to the user.`, path: [...at, 'description'] });
    }
    walk(property, at, schemaName, results);
  }
  for (const key of NESTED) walk(schema[key], [...path, key], schemaName, results);
  for (const key of LISTS) (schema[key] ?? []).forEach((member, i) => walk(member, [...path, key, i], schemaName, results));
}

export default createRulesetFunction({ input: { type: 'object' }, options: null }, function propertiesHaveDescription(schema, _opts, context) {
  const results = [];
  walk(schema, context.path, String(context.path.at(-1)), results);
  return results;
});
