// Builds a contract-valid request for any operation from its schemas, so a test can call
// every operation without hand-written fixtures.
import { randomUUID } from 'node:crypto';
import { sample } from 'openapi-sampler';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import { defaultExample, deref } from '../../scripts/codegen/contract.js';
import { contractDocument } from './contract.js';

type Json = Record<string, any>;

const resolve = (node: Json): Json => deref(contractDocument, node);

function sampleValue(schema: Json): unknown {
  const s = resolve(schema);
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.format === 'uuid') return randomUUID();
  return sample(s, { skipReadOnly: true, quiet: true }, contractDocument);
}

export interface SampledRequest {
  path: string;
  init: RequestInit;
}

export function sampleRequest(route: RouteDefinition): SampledRequest {
  const operation = contractDocument.paths[route.path][route.method];
  const parameters: Json[] = [...(contractDocument.paths[route.path].parameters ?? []), ...(operation.parameters ?? [])].map(resolve);
  let path = route.path;
  const query = new URLSearchParams();
  for (const p of parameters) {
    const value = String(p.example ?? sampleValue(p.schema));
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(value));
    if (p.in === 'query' && p.required) query.set(p.name, value);
  }
  const init: RequestInit = { method: route.method.toUpperCase() };
  const content = operation.requestBody ? resolve(operation.requestBody).content : undefined;
  if (content?.['application/json']) {
    const media = content['application/json'];
    init.body = JSON.stringify(defaultExample(contractDocument, media) ?? sampleValue(media.schema));
    init.headers = { 'content-type': 'application/json' };
  } else if (content?.['multipart/form-data']) {
    const schema = resolve(content['multipart/form-data'].schema);
    const form = new FormData();
    for (const [name, prop] of Object.entries<Json>(schema.properties ?? {})) {
      const p = resolve(prop);
      if (p.format === 'binary' || resolve(p.items ?? {}).format === 'binary') {
        form.append(name, new Blob(['Sampled upload for the routing test.'], { type: 'text/plain' }), 'sample.txt');
      } else if (schema.required?.includes(name)) {
        form.append(name, String(sampleValue(p)));
      }
    }
    init.body = form;
  } else if (content?.['application/x-www-form-urlencoded']) {
    init.body = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'sample', client_secret: 'sample' }).toString();
    init.headers = { 'content-type': 'application/x-www-form-urlencoded' };
  }
  const qs = query.toString();
  return { path: qs ? `${path}?${qs}` : path, init };
}
