// Response objects stay open: a client must accept a field the platform adds later, so no
// schema that only answers use (reached from responses, never from a request body or
// parameter) may say `additionalProperties: false`. Run unresolved: schemas are followed
// through their `$ref`s and known by where they are written.
import { createRulesetFunction } from '@stoplight/spectral-core';

const NESTED = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems'];
const LISTS = ['allOf', 'oneOf', 'anyOf', 'prefixItems'];

const at = (root, path) => path.reduce((node, key) => node?.[key], root);
const refPath = (ref) => ref.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

/** Every schema location reachable from `start` (a path into the document), through `$ref`s. */
function reachable(root, starts) {
  const seen = new Set();
  const visit = (path) => {
    const node = at(root, path);
    if (!node || typeof node !== 'object' || Array.isArray(node)) return;
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#/')) visit(refPath(node.$ref));
    const key = JSON.stringify(path);
    if (seen.has(key)) return;
    seen.add(key);
    for (const name of Object.keys(node.properties ?? {})) visit([...path, 'properties', name]);
    for (const name of Object.keys(node.patternProperties ?? {})) visit([...path, 'patternProperties', name]);
    for (const k of NESTED) if (node[k] && typeof node[k] === 'object') visit([...path, k]);
    for (const k of LISTS) (node[k] ?? []).forEach((_, i) => visit([...path, k, i]));
  };
  starts.forEach(visit);
  return seen;
}

/** Paths of every `schema` of the media types and parameters under `node`, following `$ref`s to shared responses, bodies and parameters. */
function schemaStarts(root, path, kinds) {
  const starts = [];
  const walk = (p) => {
    const node = at(root, p);
    if (!node || typeof node !== 'object') return;
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#/')) return walk(refPath(node.$ref));
    if (kinds === 'parameters') return void (node.schema && starts.push([...p, 'schema']));
    for (const mediaType of Object.keys(node.content ?? {})) if (node.content[mediaType]?.schema) starts.push([...p, 'content', mediaType, 'schema']);
  };
  const container = at(root, path);
  for (const key of Object.keys(container ?? {})) walk([...path, key]);
  return starts;
}

export default createRulesetFunction({ input: { type: 'object' }, options: null }, function responsesOpen(root) {
  const requests = [];
  const responses = [];
  for (const [pathKey, item] of Object.entries(root.paths ?? {})) {
    requests.push(...schemaStarts(root, ['paths', pathKey, 'parameters'], 'parameters'));
    for (const [method, operation] of Object.entries(item ?? {})) {
      if (!operation || typeof operation !== 'object' || !operation.responses) continue;
      requests.push(...schemaStarts(root, ['paths', pathKey, method, 'parameters'], 'parameters'));
      responses.push(...schemaStarts(root, ['paths', pathKey, method, 'responses'], 'content'));
    }
  }
  // A request body is one object, not a map: its starts are taken directly.
  for (const [pathKey, item] of Object.entries(root.paths ?? {})) {
    for (const [method, operation] of Object.entries(item ?? {})) {
      const body = operation?.requestBody;
      if (!body) continue;
      const target = typeof body.$ref === 'string' ? refPath(body.$ref) : ['paths', pathKey, method, 'requestBody'];
      for (const mediaType of Object.keys(at(root, target)?.content ?? {})) requests.push([...target, 'content', mediaType, 'schema']);
    }
  }
  const fromRequests = reachable(root, requests);
  const results = [];
  for (const key of reachable(root, responses)) {
    if (fromRequests.has(key)) continue;
    const path = JSON.parse(key);
    if (at(root, path)?.additionalProperties === false) {
      results.push({ message: 'A schema only responses use must stay open: no `additionalProperties: false` (clients must accept fields added later).', path: [...path, 'additionalProperties'] });
    }
  }
  return results;
});
