// A request before it is put on the wire: structured enough for a mutation to break one
// part of it (a body node, a parameter, a header) and leave the rest valid.
import type { RouteDefinition } from '../../../generated/contract/routes.js';
import { contractDocument } from '../contract.js';
import type { Random } from './random.js';
import { generate, resolve, uuidFrom, type Json, type SchemaNode } from './schema.js';

export interface Parameter {
  name: string;
  in: 'path' | 'query';
  schema: Json;
  /** The value as sent: already percent-encoded, so a mutation can send a broken escape. */
  encoded: string;
}

export interface UploadedFile {
  field: string;
  name: string;
  type: string;
  content: Buffer;
}

export type PlannedBody =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; nodes: SchemaNode[] }
  | { kind: 'form'; fields: [string, string][] }
  | { kind: 'multipart'; fields: [string, string][]; files: UploadedFile[] }
  /** Bytes a mutation wrote directly (malformed JSON, raw NUL, a wrong encoding). */
  | { kind: 'raw'; bytes: Buffer };

export interface RequestPlan {
  route: RouteDefinition;
  method: string;
  parameters: Parameter[];
  /** Query text appended as is (unknown, repeated or malformed parameters). */
  extraQuery: string[];
  /** Lower-case names; a name may repeat. Content-Type is among them when the body has one. */
  headers: [string, string][];
  body: PlannedBody;
}

/** What a plan needs from the platform under test. */
export interface FuzzContext {
  adminKey: string;
  /** Ids that exist (the bootstrap organization and publisher): uuid values use them often. */
  knownIds: string[];
  /** The catalog's model ids: `model` values use them often. */
  knownModels: string[];
  /** `Idempotency-Key`s shared by many requests, so that repeats and conflicts happen. */
  idempotencyKeys: string[];
  /** The platform's limits, for requests just over them. */
  limits: { jsonBody: number; uploadFile: number; uploadFiles: number };
}

const encode = (value: unknown) => encodeURIComponent(String(value));

function operationOf(route: RouteDefinition): Json {
  return contractDocument.paths[route.path][route.method];
}

/** Values that exist on the platform for a node: ids for uuids, catalog models for `model`. */
function knownFor(schema: Json, name: string | number | undefined, context: FuzzContext): string[] {
  if (schema.format === 'uuid') return context.knownIds;
  return name === 'model' ? context.knownModels : [];
}

/**
 * Leaves that name something (an id, a model) set to one that exists about half the time,
 * so requests get past lookups to the code behind them. `name`: the parameter's, for a root value.
 */
function withKnownValues(value: unknown, nodes: SchemaNode[], random: Random, context: FuzzContext, name?: string): unknown {
  for (const node of nodes) {
    const known = knownFor(node.schema, node.path.at(-1) ?? name, context);
    if (known.length === 0 || !random.chance(0.5)) continue;
    if (node.path.length === 0) return random.pick(known);
    const parent = node.path.slice(0, -1).reduce<any>((at, key) => at?.[key], value);
    if (parent && typeof parent === 'object') parent[node.path[node.path.length - 1]] = random.pick(known);
  }
  return value;
}

function parametersOf(route: RouteDefinition, random: Random, context: FuzzContext): Parameter[] {
  const declared: Json[] = [...(contractDocument.paths[route.path].parameters ?? []), ...(operationOf(route).parameters ?? [])].map(resolve);
  const parameters: Parameter[] = [];
  for (const p of declared) {
    if (p.in !== 'path' && p.in !== 'query') continue;
    if (p.in === 'query' && !p.required && !random.chance(0.4)) continue;
    const nodes: SchemaNode[] = [];
    const value = withKnownValues(generate(p.schema, random, nodes, [], p.example), nodes, random, context, p.name);
    parameters.push({ name: p.name, in: p.in, schema: resolve(p.schema), encoded: encode(value) });
  }
  return parameters;
}

function jsonBody(media: Json, random: Random, context: FuzzContext): PlannedBody {
  const nodes: SchemaNode[] = [];
  // The whole example as is some of the time: it is the one body known to reach the handler's happy path.
  const value = media.example !== undefined && random.chance(0.3) ? structuredClone(media.example) : generate(media.schema, random, nodes, [], media.example);
  if (nodes.length === 0) generate(media.schema, random, nodes, [], value);
  return { kind: 'json', value: withKnownValues(value, nodes, random, context), nodes };
}

function multipartBody(media: Json, random: Random, context: FuzzContext): PlannedBody {
  const schema = resolve(media.schema);
  const fields: [string, string][] = [];
  const files: UploadedFile[] = [];
  for (const [name, property] of Object.entries<Json>(schema.properties ?? {})) {
    const p = resolve(property);
    if (p.format === 'binary' || resolve(p.items ?? {}).format === 'binary') {
      for (let i = random.int(1, 2); i > 0; i--) {
        files.push({ field: name, name: `doc-${random.int(0, 999)}.txt`, type: 'text/plain', content: Buffer.from(`Fuzz upload ${random.int(0, 1e6)}: grace and peace.`) });
      }
    } else if (schema.required?.includes(name) || random.chance(0.5)) {
      fields.push([name, p.format === 'uuid' ? random.pick([...context.knownIds, uuidFrom(random)]) : String(generate(p, random, []))]);
    }
  }
  return { kind: 'multipart', fields, files };
}

function formBody(media: Json): PlannedBody {
  return { kind: 'form', fields: Object.entries<unknown>(media.example ?? {}).map(([k, v]) => [k, String(v)]) };
}

function bodyOf(route: RouteDefinition, random: Random, context: FuzzContext): PlannedBody {
  const requestBody = operationOf(route).requestBody;
  const media = requestBody && route.requestMediaType ? resolve(requestBody).content[route.requestMediaType] : undefined;
  if (!media) return { kind: 'none' };
  if (route.requestMediaType === 'multipart/form-data') return multipartBody(media, random, context);
  if (route.requestMediaType === 'application/x-www-form-urlencoded') return formBody(media);
  return jsonBody(media, random, context);
}

export const MULTIPART_BOUNDARY = 'fuzzboundary';

const CONTENT_TYPES: Record<PlannedBody['kind'], string | undefined> = {
  none: undefined,
  json: 'application/json',
  form: 'application/x-www-form-urlencoded',
  multipart: `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`,
  raw: undefined,
};

/** A request the contract allows for `route` (its handler may still refuse it on semantics). */
export function validPlan(route: RouteDefinition, random: Random, context: FuzzContext): RequestPlan {
  const body = bodyOf(route, random, context);
  const headers: [string, string][] = [];
  if (route.auth.scheme === 'bearer') headers.push(['authorization', `Bearer ${context.adminKey}`]);
  const contentType = CONTENT_TYPES[body.kind];
  if (contentType) headers.push(['content-type', contentType]);
  if (route.idempotent && random.chance(0.3)) headers.push(['idempotency-key', random.pick(context.idempotencyKeys)]);
  return { route, method: route.method.toUpperCase(), parameters: parametersOf(route, random, context), extraQuery: [], headers, body };
}

function multipartBytes(fields: [string, string][], files: UploadedFile[]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    parts.push(Buffer.from(`--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const file of files) {
    parts.push(Buffer.from(`--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`));
    parts.push(file.content, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${MULTIPART_BOUNDARY}--\r\n`));
  return Buffer.concat(parts);
}

export function bodyBytes(body: PlannedBody): Buffer | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json':
      return Buffer.from(JSON.stringify(body.value) ?? '');
    case 'form':
      return Buffer.from(new URLSearchParams(body.fields).toString());
    case 'multipart':
      return multipartBytes(body.fields, body.files);
    case 'raw':
      return body.bytes;
  }
}

/** The path with its parameters filled in and the query string, as sent. */
export function targetOf(plan: RequestPlan): string {
  let path = plan.route.path;
  const query: string[] = [];
  for (const p of plan.parameters) {
    if (p.in === 'path') path = path.replace(`{${p.name}}`, p.encoded);
    else query.push(`${encodeURIComponent(p.name)}=${p.encoded}`);
  }
  const all = [...query, ...plan.extraQuery];
  return all.length > 0 ? `${path}?${all.join('&')}` : path;
}
