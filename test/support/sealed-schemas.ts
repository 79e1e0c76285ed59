// Response schemas are open (a client must accept fields added later), so validating an
// answer against them cannot see a field the server sends but the contract does not declare.
// Tests validate against a sealed copy: every object shape the contract declares gets
// `unevaluatedProperties: false` where it is used, so an undeclared field is a finding.
import { deref } from '../../scripts/codegen/contract.js';

type Json = Record<string, any>;

const COMBINATORS = ['allOf', 'oneOf', 'anyOf'] as const;

/**
 * Whether the object at this position has a declared shape to seal: properties of its own
 * or of a member it combines, and nothing that opens it on purpose (additionalProperties,
 * patternProperties, unevaluatedProperties, a free-form object).
 */
function sealable(doc: Json, node: Json, seen = new Set<Json>()): boolean {
  const schema = deref(doc, node);
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return false;
  seen.add(schema);
  if ('additionalProperties' in schema || 'patternProperties' in schema || 'unevaluatedProperties' in schema) return false;
  if (schema.properties) return true;
  return COMBINATORS.some((key) => (schema[key] ?? []).some((member: Json) => sealable(doc, member, seen)));
}

/** `node` as used at a value position: wrapped so that only the properties it (and what it combines) declares may appear. */
function sealedAt(doc: Json, node: Json): Json {
  return sealable(doc, node) ? { allOf: [node], unevaluatedProperties: false } : node;
}

/** Seals the value positions inside one schema (properties, items, additionalProperties), in place. */
function sealInside(doc: Json, schema: Json, seen: Set<Json>): void {
  if (!schema || typeof schema !== 'object' || seen.has(schema) || schema.$ref) return;
  seen.add(schema);
  for (const [name, property] of Object.entries<Json>(schema.properties ?? {})) {
    sealInside(doc, property, seen);
    schema.properties[name] = sealedAt(doc, property);
  }
  for (const key of ['items', 'additionalProperties', 'contains', 'not', 'if', 'then', 'else'] as const) {
    if (schema[key] && typeof schema[key] === 'object') {
      sealInside(doc, schema[key], seen);
      schema[key] = sealedAt(doc, schema[key]);
    }
  }
  for (const key of [...COMBINATORS, 'prefixItems'] as const) {
    (schema[key] ?? []).forEach((member: Json, i: number) => {
      sealInside(doc, member, seen);
      // Members of a combination are sealed by the position that uses the whole; items are positions.
      if (key === 'prefixItems') schema[key][i] = sealedAt(doc, member);
    });
  }
}

/** A copy of the contract whose response bodies and stream events admit only declared fields. */
export function sealResponses(contract: Json): Json {
  const doc = structuredClone(contract);
  const seen = new Set<Json>();
  for (const schema of Object.values<Json>(doc.components?.schemas ?? {})) sealInside(doc, schema, seen);
  const responses: Json[] = [
    ...Object.values<Json>(doc.components?.responses ?? {}),
    ...Object.values<Json>(doc.paths).flatMap((item) => Object.values<Json>(item).flatMap((op) => (op?.responses ? Object.values<Json>(op.responses) : []))),
  ];
  for (const response of responses) {
    for (const media of Object.values<Json>(response.content ?? {})) {
      if (!media.schema) continue;
      sealInside(doc, media.schema, seen);
      media.schema = sealedAt(doc, media.schema);
    }
  }
  return doc;
}
