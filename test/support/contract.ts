// Checks bodies against openapi.yaml with a JSON Schema 2020-12 validator, for responses the
// server's own response validation does not see (errors raised before validation runs), and
// with every declared object sealed (sealed-schemas.ts): a field the contract does not declare
// is a problem here, though clients must accept one.
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { CONTRACT_PATH } from '../../server/app.js';
import { routesById, type OperationId } from '../../generated/contract/routes.js';
import { sealResponses } from './sealed-schemas.js';

export const contractDocument = parse(readFileSync(CONTRACT_PATH, 'utf8'));

const ajv = new Ajv2020.default({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(sealResponses(contractDocument), 'contract');

const pointer = (...segments: string[]) => segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** AJV's reference to the schema of (operation, status, media type), through a `components/responses` $ref. */
function schemaRef(operationId: OperationId, status: number, mediaType: string): string | string[] {
  const route = routesById[operationId];
  const declared = contractDocument.paths[route.path][route.method].responses[String(status)];
  if (!declared) return [`${operationId} declares no ${status} response`];
  const shared = typeof declared.$ref === 'string' ? declared.$ref.split('/').pop() : undefined;
  const response = shared ? contractDocument.components.responses[shared] : declared;
  if (!response.content?.[mediaType]) return [`${operationId} ${status} has no ${mediaType} body`];
  const base = shared ? ['components', 'responses', shared] : ['paths', route.path, route.method, 'responses', String(status)];
  return `contract#/${pointer(...base, 'content', mediaType, 'schema')}`;
}

function problems(ref: string | string[], value: unknown): string[] {
  if (Array.isArray(ref)) return ref;
  const validate = ajv.getSchema(ref);
  if (!validate) return [`no schema at ${ref}`];
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** Problems of `body` against the JSON schema the contract declares for (operation, status); [] when it matches. */
export function contractProblems(operationId: OperationId, status: number, body: unknown): string[] {
  return problems(schemaRef(operationId, status, 'application/json'), body);
}

/** Problems of one SSE event against the operation's `text/event-stream` event schema; [] when it matches. */
export function eventProblems(operationId: OperationId, event: unknown): string[] {
  return problems(schemaRef(operationId, 200, 'text/event-stream'), event);
}
