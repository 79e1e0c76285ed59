// Each operation declares only answers it can send: what an operation cannot do (take a
// body, an Idempotency-Key, a publisher, a path parameter) its declared errors do not show.
import { describe, expect, it } from 'vitest';
import { routes, type RouteDefinition } from '../../generated/contract/routes.js';
import { deref } from '../../scripts/codegen/contract.js';
import { contractDocument } from '../support/contract.js';

type Json = Record<string, any>;
const resolve = (node: Json) => deref(contractDocument, node);
const operationOf = (route: RouteDefinition): Json => contractDocument.paths[route.path][route.method];

/** Every declared response as [status, response] (shared ones resolved). */
const responsesOf = (route: RouteDefinition): [string, Json][] => Object.entries<Json>(operationOf(route).responses).map(([status, r]) => [status, resolve(r)]);

/** The names of every named example of the operation's responses, with their status. */
const exampleNames = (route: RouteDefinition): string[] =>
  responsesOf(route).flatMap(([status, r]) => Object.values<Json>(r.content ?? {}).flatMap((media) => Object.keys(media.examples ?? {}).map((name) => `${status} ${name}`)));

/** Property and parameter names anywhere in what a caller sends. */
function requestNames(route: RouteDefinition): Set<string> {
  const names = new Set<string>();
  const seen = new Set<Json>();
  const walk = (node: Json | undefined) => {
    const schema = node && resolve(node);
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    for (const [name, property] of Object.entries<Json>(schema.properties ?? {})) {
      names.add(name);
      walk(property);
    }
    for (const key of ['items', 'additionalProperties']) if (typeof schema[key] === 'object') walk(schema[key]);
    for (const key of ['allOf', 'oneOf', 'anyOf']) (schema[key] ?? []).forEach(walk);
  };
  const parameters = [...(contractDocument.paths[route.path].parameters ?? []), ...(operationOf(route).parameters ?? [])].map(resolve);
  for (const p of parameters) names.add(p.name);
  const body = operationOf(route).requestBody;
  for (const media of Object.values<Json>(body ? resolve(body).content : {})) walk(media.schema);
  return names;
}

const PUBLISHER_NAMES = ['publisher_id', 'publisherId', 'publisher', 'publishers', 'rag_publisher', 'tenant'];

const offenders = (test: (route: RouteDefinition) => string[]) => routes.flatMap((route) => test(route).map((what) => `${route.operationId} ${what}`));

describe('declared answers', () => {
  it('an operation without Idempotency-Key declares no replayed answer and no key conflicts', () => {
    expect(
      offenders((route) =>
        route.idempotent
          ? []
          : [
              ...responsesOf(route).filter(([, r]) => r.headers?.['Idempotent-Replayed']).map(([status]) => `${status} Idempotent-Replayed`),
              ...exampleNames(route).filter((name) => /idempotency_key/.test(name)),
            ],
      ),
    ).toEqual([]);
  });

  it('an operation without a JSON body declares no malformed-JSON answer', () => {
    expect(offenders((route) => (route.requestMediaType === 'application/json' ? [] : exampleNames(route).filter((name) => name.endsWith(' malformed_json'))))).toEqual([]);
  });

  it('an operation that names no publisher declares no publisher_not_found', () => {
    expect(
      offenders((route) => {
        const names = requestNames(route);
        return PUBLISHER_NAMES.some((n) => names.has(n)) ? [] : exampleNames(route).filter((name) => name.endsWith(' publisher_not_found'));
      }),
    ).toEqual([]);
  });

  it('every error answer declares X-Should-Retry: the error handler sends it on each', () => {
    expect(offenders((route) => responsesOf(route).filter(([status, r]) => Number(status) >= 400 && !r.headers?.['X-Should-Retry']).map(([status]) => status))).toEqual([]);
  });

  it('an operation without a body or a path parameter declares no 400 (nothing in its request can be malformed)', () => {
    expect(offenders((route) => (route.requestMediaType || route.path.includes('{') || !operationOf(route).responses['400'] ? [] : ['400']))).toEqual([]);
  });
});
