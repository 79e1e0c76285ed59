// Every 4xx/5xx response must have a JSON body whose schema (after $ref
// resolution) requires `trace_id`. oneOf/anyOf: every branch must; allOf: the
// schema itself or one of its branches must.
import { createRulesetFunction } from '@stoplight/spectral-core';

function requiresTraceId(schema) {
  if (!schema || typeof schema !== 'object') return false;
  for (const kw of ['oneOf', 'anyOf']) {
    if (Array.isArray(schema[kw])) return schema[kw].length > 0 && schema[kw].every(requiresTraceId);
  }
  const own =
    Array.isArray(schema.required) &&
    schema.required.includes('trace_id') &&
    schema.properties != null &&
    typeof schema.properties === 'object' &&
    'trace_id' in schema.properties;
  if (own) return true;
  if (Array.isArray(schema.allOf)) return schema.allOf.some(requiresTraceId);
  return false;
}

export default createRulesetFunction(
  { input: { type: 'object' }, options: null },
  function errorBodyHasTraceId(responses, _opts, { path }) {
    const results = [];
    for (const [status, response] of Object.entries(responses)) {
      if (!/^[45]/.test(status) || response == null || typeof response !== 'object') continue;
      const content = response.content;
      const jsonTypes = content ? Object.keys(content).filter((t) => /json/i.test(t)) : [];
      if (jsonTypes.length === 0) {
        results.push({ message: `${status} response must have a JSON body with trace_id.`, path: [...path, status] });
        continue;
      }
      for (const type of jsonTypes) {
        if (!requiresTraceId(content[type].schema)) {
          results.push({
            message: `${status} ${type} schema must require trace_id (in every oneOf/anyOf branch).`,
            path: [...path, status, 'content', type, 'schema'],
          });
        }
      }
    }
    return results;
  },
);
