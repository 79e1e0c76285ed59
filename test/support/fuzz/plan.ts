// A request before it is put on the wire: structured enough for a mutation to break one
// part of it (a body node, a parameter, a header) and leave the rest valid.
import type { RouteDefinition } from '../../../generated/contract/routes.js';
import { defaultExample } from '../../../scripts/codegen/contract.js';
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
  /** Ids that exist (the bootstrap organization and publisher): uuids without a name in `known` use them often. */
  knownIds: string[];
  /**
   * Values that exist, by the name of the field or parameter carrying them (`model`,
   * `collection`, `agent_id`, `publishers`, `client_id`, ...): requests get past lookups
   * to the code behind them.
   */
  known: Record<string, readonly string[]>;
  /** Like `known`, for DELETE operations: resources made for the campaign to destroy. */
  disposable: Record<string, readonly string[]>;
  /** `Idempotency-Key`s shared by many requests, so that repeats and conflicts happen. */
  idempotencyKeys: string[];
  /** The platform's limits, for requests just over them. */
  limits: { jsonBody: number; uploadFile: number; uploadFiles: number };
}

/**
 * One plan being made. A canonical plan is the request most likely to succeed: the
 * contract's example body as is, every value that names something set to one that exists,
 * no Idempotency-Key. A campaign starts with one per operation (fuzzCase).
 */
interface Generation {
  route: RouteDefinition;
  random: Random;
  context: FuzzContext;
  canonical: boolean;
}

/** How often a value with a name in `known` (or a uuid) is set to one that exists. */
const KNOWN_SHARE = 0.8;
/** How often a JSON body is the contract's example as is. */
const EXAMPLE_SHARE = 0.3;

const likely = (g: Generation, share: number) => g.canonical || g.random.chance(share);

const encode = (value: unknown) => encodeURIComponent(String(value));

function operationOf(route: RouteDefinition): Json {
  return contractDocument.paths[route.path][route.method];
}

/** A node's name: the last property name on its path (an array's items take the array's), else the parameter's. */
function nameOf(path: (string | number)[], parameter?: string): string | undefined {
  const named = path.filter((key): key is string => typeof key === 'string');
  return named.at(-1) ?? parameter;
}

/** Values that exist on the platform for a node: by its name, else ids for uuids. */
function knownFor(g: Generation, schema: Json, name: string | undefined): readonly string[] {
  const { context } = g;
  const byName = (g.route.method === 'delete' && context.disposable[name ?? '']) || context.known[name ?? ''];
  if (byName) return byName;
  return schema.format === 'uuid' ? context.knownIds : [];
}

/** A value that exists for the node, most of the time, else undefined. */
function knownValue(g: Generation, schema: Json, name: string | undefined): string | undefined {
  const known = knownFor(g, schema, name);
  return known.length > 0 && likely(g, KNOWN_SHARE) ? g.random.pick(known) : undefined;
}

/**
 * Leaves that name something (an id, a model, a publisher) set to one that exists most of
 * the time, so requests get past lookups to the code behind them. `name`: the parameter's, for a root value.
 */
function withKnownValues(g: Generation, value: unknown, nodes: SchemaNode[], name?: string): unknown {
  for (const node of nodes) {
    // Known values are text: an array or object named like one (`publishers`) gets them in its items.
    const types = [node.schema.type].flat().filter(Boolean);
    if (types.length > 0 && !types.includes('string')) continue;
    const known = knownValue(g, node.schema, nameOf(node.path, name));
    if (known === undefined) continue;
    if (node.path.length === 0) return known;
    const parent = node.path.slice(0, -1).reduce<any>((at, key) => at?.[key], value);
    // Only a leaf the body has is replaced: the nodes may come from walking the schema beside a
    // whole example, and adding a field it leaves out (`model` beside `model_family`) can make a
    // valid body invalid.
    const leaf = node.path[node.path.length - 1]!;
    if (parent && typeof parent === 'object' && Object.hasOwn(parent, leaf)) parent[leaf] = known;
  }
  return value;
}

function parametersOf(g: Generation): Parameter[] {
  const declared: Json[] = [...(contractDocument.paths[g.route.path].parameters ?? []), ...(operationOf(g.route).parameters ?? [])].map(resolve);
  const parameters: Parameter[] = [];
  for (const p of declared) {
    if (p.in !== 'path' && p.in !== 'query') continue;
    if (p.in === 'query' && !p.required && (g.canonical || !g.random.chance(0.4))) continue;
    const nodes: SchemaNode[] = [];
    const value = withKnownValues(g, generate(p.schema, g.random, nodes, [], p.example), nodes, p.name);
    parameters.push({ name: p.name, in: p.in, schema: resolve(p.schema), encoded: encode(value) });
  }
  return parameters;
}

function jsonBody(g: Generation, media: Json): PlannedBody {
  const nodes: SchemaNode[] = [];
  const example = defaultExample(contractDocument, media);
  // The whole example as is some of the time: it is the one body known to reach the handler's happy path.
  const value = example !== undefined && likely(g, EXAMPLE_SHARE) ? structuredClone(example) : generate(media.schema, g.random, nodes, [], example);
  if (nodes.length === 0) generate(media.schema, g.random, nodes, [], value);
  return { kind: 'json', value: withKnownValues(g, value, nodes), nodes };
}

function multipartBody(g: Generation, media: Json): PlannedBody {
  const { random } = g;
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
      fields.push([name, knownValue(g, p, name) ?? (p.format === 'uuid' ? uuidFrom(random) : String(generate(p, random, [])))]);
    }
  }
  return { kind: 'multipart', fields, files };
}

function formBody(g: Generation, media: Json): PlannedBody {
  const example = Object.entries<unknown>((defaultExample(contractDocument, media) ?? {}) as Json);
  return { kind: 'form', fields: example.map(([name, value]): [string, string] => [name, knownValue(g, {}, name) ?? String(value)]) };
}

function bodyOf(g: Generation): PlannedBody {
  const { route } = g;
  const requestBody = operationOf(route).requestBody;
  const media = requestBody && route.requestMediaType ? resolve(requestBody).content[route.requestMediaType] : undefined;
  if (!media) return { kind: 'none' };
  if (route.requestMediaType === 'multipart/form-data') return multipartBody(g, media);
  if (route.requestMediaType === 'application/x-www-form-urlencoded') return formBody(g, media);
  return jsonBody(g, media);
}

export const MULTIPART_BOUNDARY = 'fuzzboundary';

const CONTENT_TYPES: Record<PlannedBody['kind'], string | undefined> = {
  none: undefined,
  json: 'application/json',
  form: 'application/x-www-form-urlencoded',
  multipart: `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`,
  raw: undefined,
};

/**
 * A request the contract allows for `route` (its handler may still refuse it on semantics);
 * `canonical`: the one most likely to succeed (see Generation).
 */
export function validPlan(route: RouteDefinition, random: Random, context: FuzzContext, canonical = false): RequestPlan {
  const g: Generation = { route, random, context, canonical };
  const body = bodyOf(g);
  const headers: [string, string][] = [];
  if (route.auth.scheme === 'bearer') headers.push(['authorization', `Bearer ${context.adminKey}`]);
  const contentType = CONTENT_TYPES[body.kind];
  if (contentType) headers.push(['content-type', contentType]);
  if (route.idempotent && !canonical && random.chance(0.3)) headers.push(['idempotency-key', random.pick(context.idempotencyKeys)]);
  return { route, method: route.method.toUpperCase(), parameters: parametersOf(g), extraQuery: [], headers, body };
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
