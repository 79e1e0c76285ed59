// The invalid requests: each mutation breaks one part of a valid plan (a body node, a
// parameter, a header, the method, the body's bytes or media type) and says what it did.
import { routes } from '../../../generated/contract/routes.js';
import type { FuzzContext, Parameter, PlannedBody, RequestPlan, UploadedFile } from './plan.js';
import { bodyBytes, MULTIPART_BOUNDARY } from './plan.js';
import type { Random } from './random.js';
import { REMOVE, replaceAt, type Json, type SchemaNode } from './schema.js';
import { BAD_CURSORS, BAD_DATES, deeplyNested, jsonType, ODD_STRINGS, OVER_PARAMETER_LIMIT, TYPED_VALUES } from './values.js';

export interface Mutation {
  name: string;
  applies(plan: RequestPlan): boolean;
  /** The broken plan and a short description of the change, for the findings. */
  apply(plan: RequestPlan, random: Random, context: FuzzContext): [RequestPlan, string];
}

// ---------------------------------------------------------------- helpers

const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…(${text.length} chars)` : text;
};
const where = (node: SchemaNode) => (node.path.length ? node.path.join('.') : '(body)');

const typesOf = (schema: Json): string[] => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);
const isString = (n: SchemaNode) => typesOf(n.schema).includes('string');
const isObject = (n: SchemaNode) => typesOf(n.schema).includes('object') || !!n.schema.properties;
const isArray = (n: SchemaNode) => typesOf(n.schema).includes('array') || !!n.schema.items;
const isNumber = (n: SchemaNode) => typesOf(n.schema).some((t) => t === 'integer' || t === 'number');

const jsonNodes = (plan: RequestPlan, test: (n: SchemaNode) => boolean = () => true): SchemaNode[] =>
  plan.body.kind === 'json' ? plan.body.nodes.filter(test) : [];

const hasBody = (plan: RequestPlan) => plan.body.kind !== 'none';
const bytesOf = (plan: RequestPlan) => bodyBytes(plan.body) ?? Buffer.alloc(0);

function withBody(plan: RequestPlan, body: PlannedBody): RequestPlan {
  return { ...plan, body };
}

/** The JSON body with one node replaced. */
function setNode(plan: RequestPlan, node: SchemaNode, value: unknown): RequestPlan {
  const body = plan.body as Extract<PlannedBody, { kind: 'json' }>;
  return withBody(plan, { ...body, value: replaceAt(body.value, node.path, value) });
}

function setHeader(plan: RequestPlan, name: string, ...values: string[]): RequestPlan {
  return { ...plan, headers: [...plan.headers.filter(([n]) => n !== name), ...values.map((v): [string, string] => [name, v])] };
}

/** Percent-encoding that also writes lone surrogates, as the invalid UTF-8 a careless client sends. */
function percentEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\s\S]/g, (c) => (/[\uD800-\uDFFF]/.test(c) ? '%ED%A0%80' : encodeURIComponent(c)));
  }
}

/** A boundary value just outside (or exactly at) what the schema allows. */
function boundaryValue(node: SchemaNode, random: Random, current: unknown): unknown | undefined {
  const s = node.schema;
  const options: unknown[] = [];
  if (isNumber(node)) {
    if (s.minimum !== undefined) options.push(s.minimum - 1, s.minimum);
    if (s.maximum !== undefined) options.push(s.maximum + 1, s.maximum);
    if (typesOf(s).includes('integer')) options.push(1.5, 2 ** 53, -(2 ** 31) - 1);
    options.push(1e308, -0);
  }
  if (isString(node)) {
    if (s.maxLength !== undefined) options.push('x'.repeat(s.maxLength + 1), 'x'.repeat(s.maxLength));
    if (s.minLength !== undefined && s.minLength > 0) options.push('x'.repeat(s.minLength - 1));
  }
  if (isArray(node)) {
    const item = Array.isArray(current) && current.length > 0 ? current[0] : 'x';
    if (s.maxItems !== undefined) options.push(Array(s.maxItems + 1).fill(item));
    if (s.minItems !== undefined && s.minItems > 0) options.push(Array(s.minItems - 1).fill(item));
  }
  return options.length > 0 ? random.pick(options) : undefined;
}

const valueAt = (plan: RequestPlan, node: SchemaNode): unknown =>
  plan.body.kind === 'json' ? node.path.reduce<any>((at, key) => at?.[key], plan.body.value) : undefined;

// ---------------------------------------------------------------- body nodes

/** A mutation of one node of a JSON body, chosen among the nodes `select` accepts. */
function nodeMutation(name: string, select: (n: SchemaNode) => boolean, value: (node: SchemaNode, random: Random, plan: RequestPlan) => unknown): Mutation {
  return {
    name,
    applies: (plan) => jsonNodes(plan, select).length > 0,
    apply(plan, random) {
      const node = random.pick(jsonNodes(plan, select));
      const replacement = value(node, random, plan);
      return [setNode(plan, node, replacement), `${where(node)} = ${replacement === REMOVE ? '(removed)' : short(replacement)}`];
    },
  };
}

/**
 * A mutation that writes JSON text no JavaScript value serializes to (arrays nested deeper
 * than JSON.stringify's stack allows, number literals out of double range) in place of one node.
 */
function rawNodeMutation(name: string, select: (n: SchemaNode) => boolean, text: (random: Random) => string): Mutation {
  return {
    name,
    applies: (plan) => jsonNodes(plan, select).length > 0,
    apply(plan, random) {
      const node = random.pick(jsonNodes(plan, select));
      const marker = '__fuzz_raw_node__';
      const raw = text(random);
      const body = bytesOf(setNode(plan, node, marker)).toString().replace(`"${marker}"`, raw);
      return [withBody(plan, { kind: 'raw', bytes: Buffer.from(body) }), `${where(node)} = ${raw.length > 40 ? `${raw.slice(0, 12)}…(${raw.length} chars)` : raw}`];
    },
  };
}

const hasBoundary = (n: SchemaNode) =>
  ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'].some((k) => n.schema[k] !== undefined) || typesOf(n.schema).includes('integer');

const bodyNodeMutations: Mutation[] = [
  nodeMutation('wrong-type', () => true, (node, random) => {
    const allowed = typesOf(node.schema).map((t) => (t === 'number' ? 'integer' : t));
    const others = TYPED_VALUES.filter((v) => !allowed.includes(jsonType(v)) && !(allowed.includes('number') && typeof v === 'number'));
    return random.pick(others.length > 0 ? others : TYPED_VALUES);
  }),
  nodeMutation('boundary', hasBoundary, (node, random, plan) => boundaryValue(node, random, valueAt(plan, node)) ?? 0),
  nodeMutation('odd-unicode', isString, (_node, random) => random.pick(ODD_STRINGS)),
  nodeMutation('bad-date', (n) => n.schema.format === 'date-time', (_node, random) => random.pick(BAD_DATES)),
  nodeMutation('null', (n) => n.path.length > 0, () => null),
  // The most items the contract allows (each may become a bind parameter: the database must
  // take them), one more, or for an array with no bound more than the database's limit.
  nodeMutation('huge-array', isArray, (node, random, plan) => {
    const current = valueAt(plan, node);
    const item = Array.isArray(current) && current.length > 0 ? current[random.int(0, current.length - 1)] : 'x';
    const { maxItems } = node.schema;
    return Array(maxItems === undefined ? OVER_PARAMETER_LIMIT : random.pick([maxItems, maxItems + 1])).fill(item);
  }),
  rawNodeMutation('deep-nesting', (n) => n.path.length > 0, (random) => deeplyNested(random.pick([64, 2_000, 20_000]))),
  // Number literals JSON.parse turns into Infinity, 0 or a rounded value.
  rawNodeMutation('number-overflow', isNumber, (random) => random.pick(['1e309', '-1e309', '1e-400', '123456789012345678901234567890'])),
  {
    name: 'missing-required',
    applies: (plan) => jsonNodes(plan, (n) => isObject(n) && (n.schema.required ?? []).length > 0).length > 0,
    apply(plan, random) {
      const node = random.pick(jsonNodes(plan, (n) => isObject(n) && (n.schema.required ?? []).length > 0));
      const field = random.pick<string>(node.schema.required);
      return [setNode(plan, { ...node, path: [...node.path, field] }, REMOVE), `${[...node.path, field].join('.')} (required) removed`];
    },
  },
  {
    name: 'extra-field',
    applies: (plan) => jsonNodes(plan, isObject).length > 0,
    apply(plan, random) {
      const node = random.pick(jsonNodes(plan, isObject));
      const key = random.pick(['fuzz_extra', '__proto__', 'constructor', 'toString', ...ODD_STRINGS.slice(0, 4)]);
      const value = random.pick(TYPED_VALUES);
      const current = valueAt(plan, node);
      // Object.defineProperty: `__proto__` must become an own key, as JSON.parse makes it on the server.
      const copy = current && typeof current === 'object' && !Array.isArray(current) ? { ...current } : {};
      Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
      return [setNode(plan, node, copy), `${where(node)}[${short(key)}] = ${short(value)}`];
    },
  },
];

// ---------------------------------------------------------------- whole bodies


const bodyMutations: Mutation[] = [
  {
    name: 'malformed-json',
    applies: (plan) => plan.body.kind === 'json',
    apply(plan, random) {
      const text = bytesOf(plan).toString();
      const broken = random.pick([text.slice(0, random.int(0, Math.max(0, text.length - 1))), `${text}}`, text.replace(/"/, "'"), `${text},`, '{"a":1,}', 'NaN', '\uFEFF' + text]);
      return [withBody(plan, { kind: 'raw', bytes: Buffer.from(broken) }), short(broken)];
    },
  },
  {
    name: 'raw-nul',
    applies: hasBody,
    apply(plan, random) {
      const bytes = bytesOf(plan);
      const at = random.int(0, bytes.length);
      return [withBody(plan, { kind: 'raw', bytes: Buffer.concat([bytes.subarray(0, at), Buffer.from([0]), bytes.subarray(at)]) }), `NUL byte at ${at}`];
    },
  },
  {
    name: 'empty-body',
    applies: hasBody,
    apply: (plan) => [withBody(plan, { kind: 'raw', bytes: Buffer.alloc(0) }), 'no bytes'],
  },
  {
    name: 'top-level-type',
    applies: (plan) => plan.body.kind === 'json',
    apply(plan, random) {
      const value = random.pick([[], [{}], 'text', null, 42, true]);
      return [withBody(plan, { kind: 'raw', bytes: Buffer.from(JSON.stringify(value)) }), short(value)];
    },
  },
  {
    name: 'oversized-body',
    applies: (plan) => plan.body.kind === 'json',
    apply(plan, _random, context) {
      const padding = 'x'.repeat(context.limits.jsonBody + 1024);
      const value = plan.body.kind === 'json' && plan.body.value && typeof plan.body.value === 'object' ? { ...plan.body.value, padding } : { padding };
      return [withBody(plan, { kind: 'raw', bytes: Buffer.from(JSON.stringify(value)) }), `${context.limits.jsonBody + 1024}-byte string field`];
    },
  },
  {
    name: 'content-type',
    applies: hasBody,
    apply(plan, random) {
      const type = random.pick([
        null,
        'text/plain',
        'multipart/form-data',
        `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`,
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/json; charset=nope',
        'application/x-www-form-urlencoded',
        'application/xml',
        'application/json, text/plain',
        '/',
      ]);
      return [type === null ? { ...plan, headers: plan.headers.filter(([n]) => n !== 'content-type') } : setHeader(plan, 'content-type', type), type ?? '(none)'];
    },
  },
  {
    name: 'content-encoding',
    applies: hasBody,
    apply(plan, random) {
      const encoding = random.pick(['gzip', 'deflate', 'br', 'x-fuzz', 'identity, gzip']);
      return [setHeader(plan, 'content-encoding', encoding), `${encoding} (body not encoded)`];
    },
  },
];

// ---------------------------------------------------------------- uploads and forms

const isMultipart = (plan: RequestPlan) => plan.body.kind === 'multipart';
type Multipart = Extract<PlannedBody, { kind: 'multipart' }>;

function multipartMutation(name: string, change: (body: Multipart, random: Random, context: FuzzContext) => [Multipart | PlannedBody, string]): Mutation {
  return {
    name,
    applies: isMultipart,
    apply(plan, random, context) {
      const [body, detail] = change(plan.body as Multipart, random, context);
      return [withBody(plan, body), detail];
    },
  };
}

const file = (field: string, name: string, content: Buffer): UploadedFile => ({ field, name, type: 'text/plain', content });

const uploadMutations: Mutation[] = [
  multipartMutation('no-files', (body) => [{ ...body, files: [] }, 'no file parts']),
  multipartMutation('too-many-files', (body, _random, context) => [
    { ...body, files: Array.from({ length: context.limits.uploadFiles + 1 }, (_, i) => file('files', `f${i}.txt`, Buffer.from(`file ${i}`))) },
    `${context.limits.uploadFiles + 1} files`,
  ]),
  multipartMutation('file-too-large', (body, _random, context) => [
    { ...body, files: [file('files', 'big.txt', Buffer.alloc(context.limits.uploadFile + 1, 'a'))] },
    `${context.limits.uploadFile + 1}-byte file`,
  ]),
  multipartMutation('odd-filename', (body, random) => {
    const name = random.pick([...ODD_STRINGS, 'a'.repeat(2_000), '../../x.txt', 'x.exe']);
    return [{ ...body, files: [file('files', name, Buffer.from('content'))] }, `filename ${short(name)}`];
  }),
  multipartMutation('unexpected-file-field', (body) => [{ ...body, files: [...body.files, file('publisher_id', 'x.txt', Buffer.from('x'))] }, 'a file in publisher_id']),
  multipartMutation('truncated-multipart', (body, random) => {
    const bytes = bodyBytes(body)!;
    return [{ kind: 'raw', bytes: bytes.subarray(0, random.int(0, bytes.length - 10)) }, 'cut before the closing boundary'];
  }),
  {
    name: 'form-field',
    applies: (plan) => plan.body.kind === 'form',
    apply(plan, random) {
      const fields = (plan.body as Extract<PlannedBody, { kind: 'form' }>).fields;
      const [name] = random.pick(fields);
      const value = random.pick(['password', 'authorization_code', ...ODD_STRINGS]);
      const changed: [string, string][] = random.chance(0.5)
        ? fields.map(([n, v]): [string, string] => [n, n === name ? value : v])
        : [...fields.filter(([n]) => n !== name), ...(random.chance(0.5) ? [[name, 'one'], [name, 'two']] as [string, string][] : [])];
      return [withBody(plan, { kind: 'form', fields: changed }), new URLSearchParams(changed).toString().slice(0, 80)];
    },
  },
];

// ---------------------------------------------------------------- parameters

/**
 * A mutation of one path or query parameter to one of `candidates` (already encoded). An
 * empty path segment is never sent: it would address another operation, or none.
 */
function parameterMutation(name: string, select: (p: Parameter) => boolean, candidates: (schema: Json) => string[]): Mutation {
  return {
    name,
    applies: (plan) => plan.parameters.some(select),
    apply(plan, random) {
      const target = random.pick(plan.parameters.filter(select));
      const encoded = random.pick(candidates(target.schema).filter((c) => target.in === 'query' || c !== ''));
      return [{ ...plan, parameters: plan.parameters.map((p) => (p === target ? { ...p, encoded } : p)) }, `${target.in} ${target.name}=${encoded.slice(0, 60)}`];
    },
  };
}

const parameterMutations: Mutation[] = [
  parameterMutation('param-wrong-type', () => true, (schema) =>
    schema.type === 'integer' ? ['abc', '1.5', '1e309', '0x10', '', 'true'] : schema.format === 'uuid' ? ['not-a-uuid', 'ABCDEF00-0000-0000-0000-00000000000G', '0', ''] : ['[]', '{}', 'null', ''],
  ),
  parameterMutation('param-boundary', (p) => p.schema.minimum !== undefined || p.schema.maximum !== undefined, (schema) =>
    [(schema.minimum ?? 0) - 1, (schema.maximum ?? 0) + 1, '99999999999999999999', '-0'].map(String),
  ),
  parameterMutation('param-odd-unicode', () => true, () => ODD_STRINGS.map(percentEncode)),
  parameterMutation('param-broken-escape', () => true, () => ['%E0%A4%A', '%zz', '%', '%00', '%2F..%2F', '%C0%AF']),
  parameterMutation('param-long', () => true, () => ['x'.repeat(256), 'x'.repeat(5_000)]),
  parameterMutation('bad-cursor', (p) => p.name === 'cursor', () => BAD_CURSORS.map(percentEncode)),
  parameterMutation('param-bad-date', (p) => p.schema.format === 'date-time', () => BAD_DATES.map(percentEncode)),
  {
    name: 'extra-query',
    applies: () => true,
    apply(plan, random) {
      const first = plan.parameters.find((p) => p.in === 'query');
      const extra = random.pick([
        'fuzz=1',
        '__proto__[polluted]=1',
        'limit[]=1',
        'cursor=a&cursor=b',
        ...(first ? [`${first.name}=${first.encoded}`] : []), // repeated parameter
        `${percentEncode('\u202E')}=x`,
      ]);
      return [{ ...plan, extraQuery: [...plan.extraQuery, extra] }, extra];
    },
  },
];

// ---------------------------------------------------------------- headers, auth, method

const hasBearer = (plan: RequestPlan) => plan.route.auth.scheme === 'bearer';

const headerMutations: Mutation[] = [
  {
    name: 'no-auth',
    applies: (plan) => plan.headers.some(([n]) => n === 'authorization'),
    apply: (plan) => [{ ...plan, headers: plan.headers.filter(([n]) => n !== 'authorization') }, 'no Authorization'],
  },
  {
    name: 'bad-auth',
    applies: () => true,
    apply(plan, random, context) {
      const value = random.pick([
        `Bearer sk_${'0'.repeat(48)}`,
        `Bearer sk_${random.int(0, 1e9).toString(36)}`,
        'Bearer',
        'Bearer ',
        `Basic ${Buffer.from('client:secret').toString('base64')}`,
        'Basic !!!notbase64',
        // NUL in either part, raw or form-encoded (RFC 6749 2.3.1): no database text holds one.
        `Basic ${Buffer.from('cli\0ent:secret').toString('base64')}`,
        `Basic ${Buffer.from('client:sec\0ret').toString('base64')}`,
        `Basic ${Buffer.from('cli%00ent:secret').toString('base64')}`,
        `bearer ${context.adminKey}`,
        `Bearer  ${context.adminKey}`,
        `Bearer ${context.adminKey}x`,
        `Bearer ${context.adminKey.slice(0, -1)}`,
        'Bearer \u00ff\u00fe',
        `Token ${context.adminKey}`,
      ]);
      return [setHeader(plan, 'authorization', value), value.replace(context.adminKey, '<admin key>')];
    },
  },
  {
    name: 'duplicate-auth',
    applies: hasBearer,
    apply(plan, random, context) {
      const good = `Bearer ${context.adminKey}`;
      const bad = 'Bearer sk_wrong';
      const pair = random.pick([[good, bad], [bad, good], [good, good]]);
      return [setHeader(plan, 'authorization', ...pair), pair.map((v) => (v === good ? '<admin key>' : v)).join(' + ')];
    },
  },
  {
    name: 'oversized-header',
    applies: () => true,
    apply(plan, random, context) {
      const huge = 'a'.repeat(20 * 1024);
      return random.chance(0.5)
        ? [setHeader(plan, 'x-fuzz-padding', huge), '20 KB X-Fuzz-Padding']
        : [setHeader(plan, 'authorization', `Bearer ${context.adminKey}${huge}`), '20 KB Authorization'];
    },
  },
  {
    name: 'idempotency-key',
    applies: (plan) => plan.route.idempotent,
    apply(plan, random) {
      const value = random.pick(['', ' ', 'k'.repeat(256), 'k'.repeat(255), '\u00ff\u00fe', 'same-key']);
      const plan2 = random.chance(0.2) ? setHeader(plan, 'idempotency-key', value, 'other') : setHeader(plan, 'idempotency-key', value);
      return [plan2, `Idempotency-Key ${short(value)}${plan2.headers.filter(([n]) => n === 'idempotency-key').length > 1 ? ' twice' : ''}`];
    },
  },
  {
    name: 'accept',
    applies: () => true,
    apply(plan, random) {
      const accept = random.pick(['text/event-stream', 'application/xml', 'text/plain', '*/*;q=0', 'garbage']);
      return [setHeader(plan, 'accept', accept), accept];
    },
  },
  {
    name: 'wrong-method',
    applies: () => true,
    apply(plan, random) {
      const taken = new Set(routes.filter((r) => r.path === plan.route.path).map((r) => r.method.toUpperCase()));
      // HEAD on a path with a GET is that GET operation, answered without its body.
      if (taken.has('GET')) taken.add('HEAD');
      const method = random.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'].filter((m) => !taken.has(m)));
      return [{ ...plan, method }, method];
    },
  },
];

export const mutations: readonly Mutation[] = [...bodyNodeMutations, ...bodyMutations, ...uploadMutations, ...parameterMutations, ...headerMutations];
