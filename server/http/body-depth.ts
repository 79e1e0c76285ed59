// A JSON body nests at most MAX_BODY_DEPTH levels of arrays and objects. V8's JSON.parse
// takes any depth, but what comes after it recurses: JSON.stringify of a tool's `parameters`
// nested 3,000 deep overflowed the stack in the local provider (a retryable 500), and so
// would an upstream request, a stored response or an answer quoting it. Refused once here,
// as the operation's validation error, nothing later meets a deeper value.
import type { RequestHandler } from 'express';
import { ApiError } from '../errors.js';

/** Levels of arrays and objects a JSON body may nest, the body itself being the first. */
export const MAX_BODY_DEPTH = 64;

/** The path to the first array or object deeper than MAX_BODY_DEPTH, if any. */
function tooDeepAt(value: unknown, depth: number): string[] | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (depth > MAX_BODY_DEPTH) return [];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const below = tooDeepAt(value[i], depth + 1);
      if (below) return [String(i), ...below];
    }
    return undefined;
  }
  // A parsed body's objects are plain: every enumerable key is their own.
  for (const key in value) {
    const below = tooDeepAt((value as Record<string, unknown>)[key], depth + 1);
    if (below) return [key, ...below];
  }
  return undefined;
}

/** Refuses a parsed JSON body nested deeper than MAX_BODY_DEPTH, naming where and the limit. */
export const refuseDeepBodies: RequestHandler = (req, _res, next) => {
  const at = tooDeepAt(req.body, 1);
  if (!at) return next();
  const msg = `Must NOT nest arrays and objects more than ${MAX_BODY_DEPTH} levels deep`;
  next(new ApiError('VALIDATION_ERROR', 'Request validation failed', { issues: [{ loc: ['body', ...at], msg, type: 'too_deep' }] }));
};
