// Request validation against openapi.yaml (express-openapi-validator), and the translation
// of its findings into the contract's 422 shape (spec 2.6).
import express, { type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { ValidationIssue } from '../errors.js';

export interface ValidatorOptions {
  apiSpec: string;
  validateResponses: boolean;
}

/** One validator instance serves every route of an app; it matches the operation by path itself. */
export function createValidator(options: ValidatorOptions): RequestHandler[] {
  return OpenApiValidator.middleware({
    apiSpec: options.apiSpec,
    validateApiSpec: false,
    validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: true },
    // Thrown response-validation errors surface as 500s with the finding in the log,
    // which is what makes contract drift fail the test suite.
    validateResponses: options.validateResponses ? { allErrors: true } : false,
    validateSecurity: false,
    ignoreUndocumented: true,
    // Multipart is parsed earlier in the pipeline (multipart.ts).
    fileUploader: false,
  }) as unknown as RequestHandler[];
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

function issueType(finding: ValidatorFinding): string {
  const keyword = (finding.errorCode ?? '').split('.')[0];
  if (keyword === 'type') {
    const expected = /must be (\w+)/.exec(finding.message)?.[1] ?? '';
    return TYPE_NAMES[expected] ?? 'type_error';
  }
  if (keyword === 'format') return /"uuid"/.test(finding.message) ? 'uuid_parsing' : 'value_error';
  return KEYWORD_TYPES[keyword] ?? 'value_error';
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

/** express-openapi-validator findings → FastAPI-style `detail[]` entries (loc, msg, type, input). */
export function toValidationIssues(findings: ValidatorFinding[], request: RequestParts): ValidationIssue[] {
  return findings.slice(0, MAX_ISSUES).map((finding) => {
    const loc = finding.path
      .split('/')
      .filter(Boolean)
      .map((segment) => (segment === 'params' ? 'path' : segment));
    const type = issueType(finding);
    const input = type === 'missing' ? null : valueAt(request, loc);
    return {
      loc,
      msg: type === 'missing' ? 'Field required' : finding.message.replace(/^must/, 'Must'),
      type,
      ...(input === undefined ? {} : { input }),
    };
  });
}

export function isValidatorError(error: unknown): error is { status: number; errors: ValidatorFinding[]; message: string } {
  return typeof error === 'object' && error !== null && Array.isArray((error as { errors?: unknown }).errors) && 'status' in error;
}

/**
 * The validator loads and preprocesses the contract on its first request (well over a
 * second for this document); running an undocumented request through it at start-up moves
 * that cost out of the first caller's answer.
 */
export async function warmUpValidator(validator: RequestHandler[]): Promise<void> {
  // `app` takes the validator's path-parameter hook, which the routers' own params never use.
  const req = { app: express(), method: 'GET', url: '/__warm-up', originalUrl: '/__warm-up', path: '/__warm-up', baseUrl: '', headers: {}, query: {}, params: {}, body: {} };
  const res = { locals: {}, setHeader: () => undefined, getHeader: () => undefined };
  for (const middleware of validator) {
    const failed = await new Promise<unknown>((resolve) => {
      void middleware(req as never, res as never, resolve);
    });
    if (failed) throw failed;
  }
}
