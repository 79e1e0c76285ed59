// Checks bodies against openapi.yaml with a JSON Schema 2020-12 validator, for responses the
// server's own response validation does not see (errors raised before validation runs).
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { CONTRACT_PATH } from '../../server/app.js';
import { routesById, type OperationId } from '../../generated/contract/routes.js';

export const contractDocument = parse(readFileSync(CONTRACT_PATH, 'utf8'));

const ajv = new Ajv2020.default({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(contractDocument, 'contract');

const pointer = (...segments: string[]) => segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Problems of `body` against the JSON schema the contract declares for (operation, status); [] when it matches. */
export function contractProblems(operationId: OperationId, status: number, body: unknown): string[] {
  const route = routesById[operationId];
  const responses = contractDocument.paths[route.path][route.method].responses;
  if (!responses[String(status)]) return [`${operationId} declares no ${status} response`];
  let response = responses[String(status)];
  while (response.$ref) response = contractDocument.components.responses[response.$ref.split('/').pop()];
  if (!response.content?.['application/json']) return [`${operationId} ${status} has no JSON body`];
  const ref = response === responses[String(status)]
    ? `contract#/${pointer('paths', route.path, route.method, 'responses', String(status), 'content', 'application/json', 'schema')}`
    : `contract#/${pointer('components', 'responses', responses[String(status)].$ref.split('/').pop(), 'content', 'application/json', 'schema')}`;
  const validate = ajv.getSchema(ref);
  if (!validate) return [`no schema at ${ref}`];
  return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}
