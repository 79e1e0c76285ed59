// A union of stream events keeps its discriminator, so generated clients narrow each event
// to its type. Where every branch requires one property with a distinct constant value
// (Responses events: `type`), the union must name it in `discriminator` and map every value
// to its branch. A union whose branches no property tells apart (chat chunks all say
// `object: "chat.completion.chunk"`) cannot have one and is left alone. Run unresolved: a
// mapping names branches by their `$ref`.
import { createRulesetFunction } from '@stoplight/spectral-core';

const at = (root, path) => path.reduce((node, key) => node?.[key], root);
const refPath = (ref) => ref.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

/** The path a schema's `$ref` chain ends at. */
function target(root, path) {
  const node = at(root, path);
  return typeof node?.$ref === 'string' && node.$ref.startsWith('#/') ? target(root, refPath(node.$ref)) : path;
}

/** The single value a branch requires for `name`, or undefined. */
function constantOf(branch, name) {
  if (!branch?.required?.includes(name)) return undefined;
  const property = branch.properties?.[name];
  if (property?.const !== undefined) return property.const;
  return Array.isArray(property?.enum) && property.enum.length === 1 ? property.enum[0] : undefined;
}

/** Properties every branch requires with a constant of its own (no two branches alike). */
function discriminatingProperties(branches) {
  const names = Object.keys(branches[0]?.properties ?? {});
  return names.filter((name) => {
    const values = branches.map((b) => constantOf(b, name));
    return values.every((v) => v !== undefined) && new Set(values).size === values.length;
  });
}

function unionProblems(root, path) {
  const union = at(root, path);
  const list = ['oneOf', 'anyOf'].find((k) => Array.isArray(union?.[k]));
  if (!list) return [];
  const refs = union[list].map((b) => b?.$ref);
  const branches = union[list].map((_, i) => at(root, target(root, [...path, list, i])));
  const candidates = discriminatingProperties(branches);
  if (candidates.length === 0) return [];
  const name = union.discriminator?.propertyName;
  if (!candidates.includes(name)) {
    return [{ message: `Stream event union needs \`discriminator.propertyName\` ${candidates.map((c) => `\`${c}\``).join(' or ')}: every branch has its own constant.`, path }];
  }
  const mapping = union.discriminator.mapping ?? {};
  const results = [];
  branches.forEach((branch, i) => {
    const value = constantOf(branch, name);
    if (mapping[value] !== refs[i]) {
      results.push({ message: `discriminator mapping must map "${value}" to ${refs[i] ?? 'its branch (an inline branch cannot be mapped)'}.`, path: [...path, 'discriminator', 'mapping'] });
    }
  });
  for (const key of Object.keys(mapping)) {
    if (!branches.some((b) => constantOf(b, name) === key)) results.push({ message: `discriminator mapping "${key}" names no branch of the union.`, path: [...path, 'discriminator', 'mapping', key] });
  }
  return results;
}

export default createRulesetFunction({ input: { type: 'object' }, options: null }, function streamEventsDiscriminated(root) {
  const unions = new Set();
  const visitResponses = (base, responses) => {
    for (const status of Object.keys(responses ?? {})) {
      const schema = [...target(root, [...base, status]), 'content', 'text/event-stream', 'schema'];
      if (at(root, schema)) unions.add(JSON.stringify(target(root, schema)));
    }
  };
  for (const [pathKey, item] of Object.entries(root.paths ?? {})) {
    for (const [method, operation] of Object.entries(item ?? {})) if (operation?.responses) visitResponses(['paths', pathKey, method, 'responses'], operation.responses);
  }
  visitResponses(['components', 'responses'], root.components?.responses);
  return [...unions].flatMap((key) => unionProblems(root, JSON.parse(key)));
});
