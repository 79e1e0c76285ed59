// The checks of what editors show for the SDK's surface, run against the source
// (surface-types.test.ts) and against the built index.d.ts users install (readme.test.ts):
// every method's hover reads with exported, readable type names and carries the
// operation's docs, and every deprecated operation names its replacement.
import { expect } from 'vitest';
import { clientRoutesById } from '../../../generated/contract/client-routes.js';
import { resourceMethods } from '../../../generated/sdk/methods.js';
import { readSurface } from './hover.js';

/** The generic helpers a readable signature does not show. */
const HELPERS = /\b(BodyOf|DataOf|PathOf|QueryOf|ParamsOf|ResultOf|StreamOf)</;

const routes = Object.values(clientRoutesById);
const placeOf = new Map(resourceMethods.map(([at, id]) => [id, `client.${at}`]));

export function expectDocumentedSurface(entry: string): void {
  const { hovers, exports } = readSurface(entry, [...resourceMethods.map(([at]) => at), ...routes.map((r) => r.operationId)]);
  const exported = new Set(exports);
  expect(exported.has('Response'), 'no export shadows the DOM Response').toBe(false);

  for (const [at, operationId, pathNames, hasBody, hasQuery] of resourceMethods) {
    const hover = hovers[at]!;
    const route = clientRoutesById[operationId as keyof typeof clientRoutesById];
    expect(hover.display, at).not.toMatch(HELPERS);
    // Every type name the signature shows can be imported from the package.
    const shown = [...hover.display.replace(/^\(method\) /, '').matchAll(/\b[A-Z]\w*/g)].map((m) => m[0]);
    expect(shown.filter((name) => !exported.has(name)), at).toEqual([]);
    for (const name of pathNames) expect(hover.display, at).toMatch(new RegExp(`\\b${name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}: string\\b`));
    expect(hover.doc, at).toContain(`\`${route.method.toUpperCase()} ${route.path}\``);
    expect(hover.tags, at).toHaveProperty('param options');
    if (hasBody) expect(hover.tags, at).toHaveProperty('param body');
    if (hasQuery) expect(hover.tags, at).toHaveProperty('param query');
    expect(hover.tags.deprecated, at).toBeUndefined();
  }

  for (const route of routes) {
    const hover = hovers[route.operationId]!;
    expect(hover.tags, route.operationId).toHaveProperty('param options');
    if (route.path.includes('{')) expect(Object.keys(hover.tags).some((tag) => tag.startsWith('param params.path.')), route.operationId).toBe(true);
    if (!route.deprecated) {
      expect(hover.tags.deprecated, route.operationId).toBeUndefined();
      if (placeOf.has(route.operationId)) expect(hover.doc, route.operationId).toContain(`Prefer \`${placeOf.get(route.operationId)}()\``);
      continue;
    }
    // Deprecated: struck through, naming what to call instead.
    expect(route.replacedBy, route.operationId).not.toBeNull();
    const place = placeOf.get(route.replacedBy!);
    const replacement = place ? `\`${place}()\` (${route.replacedBy})` : `\`${route.replacedBy}()\``;
    expect(hover.tags.deprecated, route.operationId).toContain(`Use ${replacement} instead.`);
  }
}
