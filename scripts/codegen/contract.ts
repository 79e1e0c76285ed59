// Reads openapi.yaml into the normalized operation model every generator works from,
// so that each generator derives its facts from the contract in one agreed way.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

type Json = Record<string, any>;

export const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export type ApiName = 'api' | 'management';
/** How an SSE stream is framed on the wire: OpenAI chat chunks (`data:` only) or named events. */
export type SseFraming = 'data' | 'named';

export interface ErrorCatalogEntry {
  name: string;
  code: number;
  status: number;
  retryable: boolean;
  category: string;
  description: string;
}

export interface ResponseModel {
  status: number;
  /** Media types declared for this status, in document order. */
  mediaTypes: string[];
  /** Component schema names of the JSON body (one, or several for a oneOf). */
  jsonSchemaNames: string[];
  headers: string[];
}

export interface OperationModel {
  operationId: string;
  method: HttpMethod;
  path: string;
  api: ApiName;
  tag: string;
  summary: string;
  deprecated: boolean;
  replacedBy: string | null;
  /** RFC 8594 sunset date of a deprecated operation (`x-sunset`). */
  sunset: string | null;
  /** When it was deprecated (`x-deprecated-at` on the operation, else the document's). */
  deprecatedAt: string | null;
  /** null: no credentials needed; otherwise the scheme and the scopes the operation requires. */
  auth: { scheme: 'bearer' | 'basic' | 'none'; scopes: string[] };
  pathParams: string[];
  hasQuery: boolean;
  /** Whether the operation takes an `Idempotency-Key` header. */
  idempotent: boolean;
  requestMediaType: string | null;
  requestRequired: boolean;
  responses: ResponseModel[];
  sse: SseFraming | null;
}

export interface ContractModel {
  document: Json;
  operations: OperationModel[];
  errorCatalog: ErrorCatalogEntry[];
  scopes: Record<string, string>;
}

export function loadContract(file: string): ContractModel {
  const document = parse(readFileSync(file, 'utf8')) as Json;
  const operations: OperationModel[] = [];
  for (const [path, rawItem] of Object.entries<Json>(document.paths ?? {})) {
    const item = deref(document, rawItem);
    const api: ApiName = item.servers ? 'management' : 'api';
    for (const method of HTTP_METHODS) {
      if (item[method]) operations.push(toOperation(document, path, method, api, item, item[method]));
    }
  }
  const ids = new Set<string>();
  for (const op of operations) {
    if (ids.has(op.operationId)) throw new Error(`duplicate operationId ${op.operationId}`);
    ids.add(op.operationId);
  }
  operations.sort((a, b) => a.operationId.localeCompare(b.operationId));
  return {
    document,
    operations,
    errorCatalog: (document['x-error-catalog'] ?? []) as ErrorCatalogEntry[],
    scopes: (document['x-scopes'] ?? {}) as Record<string, string>,
  };
}

function toOperation(doc: Json, path: string, method: HttpMethod, api: ApiName, item: Json, op: Json): OperationModel {
  const where = `${method.toUpperCase()} ${path}`;
  if (!op.operationId) throw new Error(`${where}: operationId missing`);
  if (!Array.isArray(op.tags) || op.tags.length !== 1) throw new Error(`${where}: exactly one tag expected`);
  const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) => deref(doc, p));
  const body = op.requestBody ? deref(doc, op.requestBody) : null;
  if (body && Object.keys(body.content ?? {}).length !== 1) {
    throw new Error(`${where}: exactly one request media type expected (the server parses one)`);
  }
  const responses = Object.entries<Json>(op.responses ?? {}).map(([status, raw]) => toResponse(Number(status), deref(doc, raw)));
  const streamResponse = responses.find((r) => r.status === 200 && r.mediaTypes.includes('text/event-stream'));
  return {
    operationId: op.operationId,
    method,
    path,
    api,
    tag: op.tags[0],
    summary: op.summary ?? '',
    deprecated: op.deprecated === true,
    replacedBy: op['x-replaced-by'] ?? null,
    sunset: op['x-sunset'] ?? null,
    deprecatedAt: op.deprecated === true ? (op['x-deprecated-at'] ?? doc['x-deprecated-at'] ?? null) : null,
    auth: authOf(doc, op),
    pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
    hasQuery: parameters.some((p) => p.in === 'query'),
    idempotent: parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key'),
    requestMediaType: body ? Object.keys(body.content ?? {})[0] ?? null : null,
    requestRequired: body?.required === true,
    responses,
    sse: streamResponse ? sseFraming(doc, op, streamResponse) : null,
  };
}

function toResponse(status: number, response: Json): ResponseModel {
  const content = response.content ?? {};
  const json = content['application/json'];
  return {
    status,
    mediaTypes: Object.keys(content),
    jsonSchemaNames: json ? schemaNames(json.schema) : [],
    headers: Object.keys(response.headers ?? {}),
  };
}

/** Names of the component schemas a body schema points at: a $ref, or a oneOf/anyOf of $refs. */
function schemaNames(schema: Json | undefined): string[] {
  if (!schema) return [];
  if (typeof schema.$ref === 'string') return [refName(schema.$ref)];
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(alternatives)) return alternatives.flatMap((s: Json) => schemaNames(s));
  return [];
}

function authOf(doc: Json, op: Json): OperationModel['auth'] {
  const requirements: Json[] = op.security ?? doc.security ?? [];
  const anonymous = requirements.length === 0 || requirements.some((r) => Object.keys(r).length === 0);
  const bearer = requirements.find((r) => 'bearerAuth' in r);
  if (bearer && anonymous) throw new Error(`${op.operationId}: optional bearer credentials are not supported; require them or drop them`);
  if (bearer && !anonymous) return { scheme: 'bearer', scopes: [...bearer.bearerAuth].sort() };
  if (requirements.some((r) => 'basicAuth' in r)) return { scheme: 'basic', scopes: [] };
  return { scheme: 'none', scopes: [] };
}

/**
 * The contract's own stream example tells the framing: named events start with `event:`.
 * An explicit `x-sse-framing` on the operation wins.
 */
function sseFraming(doc: Json, op: Json, response: ResponseModel): SseFraming {
  if (op['x-sse-framing'] === 'named' || op['x-sse-framing'] === 'data') return op['x-sse-framing'];
  const raw = deref(doc, op.responses[String(response.status)]);
  const example = defaultExample(doc, raw.content['text/event-stream']);
  return typeof example === 'string' && example.trimStart().startsWith('event:') ? 'named' : 'data';
}

/**
 * A media type's default example, as Prism picks it: `example` (request bodies may still
 * have one), else the value of the first named `examples` entry.
 */
export function defaultExample(doc: Json, media: Json | undefined): unknown {
  if (media?.example !== undefined) return media.example;
  const first = Object.values<Json>(media?.examples ?? {})[0];
  return first ? deref(doc, first).value : undefined;
}

export function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

/** Follows local `#/...` references until a non-reference object (undefined stays undefined). */
export function deref(doc: Json, node: Json | undefined): Json {
  let current = node as Json;
  for (let depth = 0; current && typeof current.$ref === 'string'; depth++) {
    if (depth > 32) throw new Error(`reference cycle at ${node?.$ref}`);
    const ref: string = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`only local references are supported: ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((acc: Json, key) => acc?.[key], doc);
    if (current === undefined) throw new Error(`unresolved reference ${ref}`);
  }
  return current;
}
