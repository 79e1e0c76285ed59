// Request validation against openapi.yaml (express-openapi-validator), and the translation
// of its findings into the contract's 422 shape (spec 2.6).
//
// The library's own middleware finds each request's operation by compiling every path
// pattern of the contract again, per request. The router already knows the operation, so
// the contract is loaded once here and each route gets the library's request (and, in
// tests, response) validator with the operation's metadata attached directly.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RequestValidator, ResponseValidator } from 'express-openapi-validator/dist/middlewares/index.js';
import { SchemaPreprocessor } from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import type { OpenAPIV3, OpenApiRequest, ValidateResponseOpts } from 'express-openapi-validator/dist/framework/types.js';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError, type ValidationIssue } from '../errors.js';
import { PUBLISHERS_HINT } from '../identity/organizations.js';

export interface ValidatorOptions {
  apiSpec: string;
  validateResponses: boolean;
}

/** The validation steps of one operation, built once when the router binds it. */
export type OperationValidator = (route: RouteDefinition) => RequestHandler[];

/** Loads and preprocesses the contract (well over a second for this document), once. */
export async function createValidator(options: ValidatorOptions): Promise<OperationValidator> {
  // Normalises the options into the ajv settings its validators expect.
  const settings = new OpenApiValidator({
    apiSpec: options.apiSpec,
    validateApiSpec: false,
    // Bodies are JSON and keep their types: `{"name": 12345}` is not a string. Path and
    // query parameters are text and are always coerced by the library, whatever this says.
    validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: false },
    // Thrown response-validation errors surface as 500s with the finding in the log,
    // which is what makes contract drift fail the test suite.
    validateResponses: options.validateResponses ? { allErrors: true } : false,
    validateSecurity: false,
    // Multipart is parsed earlier in the pipeline (multipart.ts).
    fileUploader: false,
  });
  const spec = await new OpenApiSpecLoader({ apiDoc: options.apiSpec, validateApiSpec: false, $refParser: { mode: 'bundle' } }).load();
  allowReservedInQueries(spec.apiDoc);
  // Without response validation (null) the preprocessor makes no response copy of the contract.
  const responseOptions = (settings.options.validateResponses || null) as ValidateResponseOpts;
  const { apiDocRes } = new SchemaPreprocessor(spec.apiDoc, settings.ajvOpts.preprocessor, responseOptions).preProcess();
  const requests = new RequestValidator(spec.apiDoc, settings.ajvOpts.request);
  // Stops at the first finding: for bodies too big to list them all (listsEveryFinding).
  const firstFinding = new RequestValidator(spec.apiDoc, { ...settings.ajvOpts.request, allErrors: false });
  const responses: RequestHandler | null = options.validateResponses && apiDocRes
    ? (new ResponseValidator(responseSchemasOnly(apiDocRes), settings.ajvOpts.response, responseOptions, spec.serial).validate() as RequestHandler)
    : null;

  return (route) => {
    const found = spec.routes.find((r) => r.method === route.method.toUpperCase() && r.openApiRoute.slice(r.basePath.length) === route.path);
    if (!found) throw new Error(`${route.operationId}: ${route.method.toUpperCase()} ${route.path} is not in the contract the validator loaded`);
    const { expressRoute, openApiRoute } = found;
    const schema = operationOf(spec.apiDoc, route);
    const _responseSchema = apiDocRes ? withResolvedResponses(apiDocRes, operationOf(apiDocRes, route)) : undefined;
    // What the library's route lookup would have attached; Express has already decoded the path parameters.
    const validate = (req: Request, res: Response, next: NextFunction) => {
      const request = req as OpenApiRequest;
      request.openapi = { expressRoute, openApiRoute, pathParams: req.params, schema, serial: spec.serial, _responseSchema } as never;
      const validator = listsEveryFinding(req.body) ? requests : firstFinding;
      return validator.validate(request, res, (error?: unknown) => next(error ?? parameterIssues(req)));
    };
    return responses ? [validate, responses] : [validate];
  };
}

type ApiDoc = OpenAPIV3.DocumentV3 | OpenAPIV3.DocumentV3_1;

/** Array elements and object members a body may hold and still have every finding listed. */
const EVERY_FINDING_UP_TO = 2_000;

/**
 * Whether a body is small enough to be checked for every finding. With all findings kept,
 * ajv appends a referenced schema's findings to the list by copying it (concat): the cost
 * grows with the square of the findings, and 8,000 invalid Responses input items held the
 * event loop for 6 s (10,000 are allowed). A bigger body is refused on its first finding.
 */
function listsEveryFinding(body: unknown): boolean {
  let budget = EVERY_FINDING_UP_TO;
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (value === null || typeof value !== 'object') continue;
    const members = Array.isArray(value) ? value : Object.values(value);
    budget -= members.length;
    if (budget < 0) return false;
    for (const member of members) if (member !== null && typeof member === 'object') pending.push(member);
  }
  return true;
}

function operationOf(apiDoc: ApiDoc, route: RouteDefinition): OpenAPIV3.OperationObject {
  return (apiDoc.paths as Record<string, Record<string, OpenAPIV3.OperationObject>>)[route.path][route.method];
}

/**
 * The contract as the library's response validator gets it: the component schemas alone.
 * It compiles a validator per (route, status, media type) on first use, each with its
 * document's paths and components inlined for ajv to walk (~370 KB for this contract):
 * seconds of blocked event loop on a route's first answers, and the fuzz campaign's
 * requests timed out behind them on a busy machine. The responses it validates come
 * resolved with each request (withResolvedResponses), so it needs nothing else.
 */
function responseSchemasOnly(apiDocRes: ApiDoc): ApiDoc {
  return { ...apiDocRes, paths: {}, components: { schemas: apiDocRes.components?.schemas ?? {} } } as ApiDoc;
}

/** The operation with its `#/components/responses/...` references replaced by what they name. */
function withResolvedResponses(apiDocRes: ApiDoc, operation: OpenAPIV3.OperationObject): OpenAPIV3.OperationObject {
  const named = (apiDocRes.components?.responses ?? {}) as Record<string, OpenAPIV3.ResponseObject>;
  const responses = Object.fromEntries(
    Object.entries(operation.responses ?? {}).map(([status, response]) => {
      const ref = (response as OpenAPIV3.ReferenceObject).$ref;
      return [status, ref ? named[ref.slice(ref.lastIndexOf('/') + 1)] : response];
    }),
  );
  return { ...operation, responses };
}

/**
 * The library refuses a query value with a raw reserved character unless its parameter
 * says `allowReserved`, yet the query parser decodes them unambiguously, and `+` (a space
 * in form encoding, as URLSearchParams writes it) is what correct clients send. The
 * decoded value is still checked against the parameter's schema.
 */
function allowReservedInQueries(apiDoc: ApiDoc): void {
  const parameters = [
    ...Object.values(apiDoc.components?.parameters ?? {}),
    ...Object.values(apiDoc.paths ?? {}).flatMap((item) =>
      Object.values(item as Record<string, unknown>).flatMap((value) => (value as { parameters?: unknown[] })?.parameters ?? []),
    ),
    ...Object.values(apiDoc.paths ?? {}).flatMap((item) => (item as { parameters?: unknown[] }).parameters ?? []),
  ] as { in?: string; allowReserved?: boolean }[];
  for (const parameter of parameters) if (parameter.in === 'query') parameter.allowReserved = true;
}

interface ValidatorFinding {
  path: string;
  message: string;
  errorCode?: string;
}

const MAX_ISSUES = 50;

const TYPE_NAMES: Record<string, string> = {
  array: 'list_type',
  string: 'string_type',
  integer: 'int_type',
  number: 'float_type',
  boolean: 'bool_type',
  object: 'dict_type',
  null: 'none_required',
};

const KEYWORD_TYPES: Record<string, string> = {
  required: 'missing',
  enum: 'enum',
  const: 'literal_error',
  minimum: 'greater_than_equal',
  maximum: 'less_than_equal',
  exclusiveMinimum: 'greater_than',
  exclusiveMaximum: 'less_than',
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  minItems: 'too_short',
  maxItems: 'too_long',
  pattern: 'string_pattern_mismatch',
  additionalProperties: 'extra_forbidden',
  unevaluatedProperties: 'extra_forbidden',
};

const keywordOf = (finding: ValidatorFinding) => (finding.errorCode ?? '').split('.')[0];

function issueType(finding: ValidatorFinding): string {
  const keyword = keywordOf(finding);
  if (keyword === 'type') {
    const expected = /must be (\w+)/.exec(finding.message)?.[1] ?? '';
    return TYPE_NAMES[expected] ?? 'type_error';
  }
  if (keyword === 'format') return /"uuid"/.test(finding.message) ? 'uuid_parsing' : 'value_error';
  return KEYWORD_TYPES[keyword] ?? 'value_error';
}

/**
 * What the library lets past in parameters: a query number coerced from `1e309` is Infinity
 * (past `maximum`), and text may hold NUL (`%00`), which PostgreSQL text cannot. Both are
 * refused here rather than reaching the database.
 */
function parameterIssues(req: Request): ApiError | undefined {
  const issues: ValidationIssue[] = [];
  for (const [where, parameters] of [['query', req.query], ['path', req.params]] as const) {
    for (const [name, value] of Object.entries(parameters ?? {})) {
      for (const item of [value].flat()) {
        if (typeof item === 'number' && !Number.isFinite(item)) issues.push({ loc: [where, name], msg: 'Must be a finite number', type: 'finite_number', input: String(item) });
        if (typeof item === 'string' && item.includes('\0')) issues.push({ loc: [where, name], msg: 'Must not contain NUL characters', type: 'value_error', input: item });
      }
    }
  }
  return issues.length ? new ApiError('VALIDATION_ERROR', 'Request validation failed', { issues }) : undefined;
}

type RequestParts = { body?: unknown; query?: unknown; params?: unknown; headers?: unknown };

function valueAt(parts: RequestParts, loc: string[]): unknown {
  let node: unknown = parts;
  for (const key of loc) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key === 'path' ? 'params' : key];
  }
  return node;
}

/**
 * ajv reports a property name breaking `propertyNames` (a `metadata` key too long) twice at
 * the object's path: why (`must NOT have more than 64 characters`), then `property name must
 * be valid`. Kept as one finding that says the name is what breaks it.
 */
function withPropertyNamesMerged(findings: ValidatorFinding[]): ValidatorFinding[] {
  const merged: ValidatorFinding[] = [];
  for (const finding of findings) {
    const why = merged.at(-1);
    if (keywordOf(finding) === 'propertyNames' && why && why.path === finding.path && keywordOf(why) !== 'propertyNames') {
      merged[merged.length - 1] = { ...why, message: `Property name ${why.message}` };
    } else {
      merged.push(finding);
    }
  }
  return merged;
}

/** express-openapi-validator findings → FastAPI-style `detail[]` entries (loc, msg, type, input). */
/** Request fields that name a publisher (by id, or by name as search and grounding do). */
const PUBLISHER_FIELDS = new Set(['publisher_id', 'publisherId', 'rag_publisher', 'publishers', 'tenant']);

export function toValidationIssues(findings: ValidatorFinding[], request: RequestParts): ValidationIssue[] {
  return withPropertyNamesMerged(findings).slice(0, MAX_ISSUES).map((finding) => {
    const loc = finding.path
      .split('/')
      .filter(Boolean)
      .map((segment) => (segment === 'params' ? 'path' : segment));
    const type = issueType(finding);
    // Quoted within bounds where the answer is rendered (http/errors/render.ts).
    const input = type === 'missing' ? null : valueAt(request, loc);
    const msg = type === 'missing' ? 'Field required' : finding.message.replace(/^must/, 'Must');
    return {
      loc,
      // A publisher's id or name that is missing or malformed: say where to find the right one.
      msg: loc.some((segment) => PUBLISHER_FIELDS.has(segment)) ? `${msg} (${PUBLISHERS_HINT})` : msg,
      type,
      ...(input === undefined ? {} : { input }),
    };
  });
}

export function isValidatorError(error: unknown): error is { status: number; errors: ValidatorFinding[]; message: string } {
  return typeof error === 'object' && error !== null && Array.isArray((error as { errors?: unknown }).errors) && 'status' in error;
}
