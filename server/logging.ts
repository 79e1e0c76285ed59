import pino, { type Logger } from 'pino';
import { bounded, cut, type Bounds } from './bounded.js';

/** Credentials never reach a log line: headers that carry them are removed at the source. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  '*.key',
  '*.secret',
  '*.client_secret',
  '*.access_token',
];

/**
 * What one log call may write: a line carries at most 16 KiB of logged values (each string
 * at most 4 KiB, nesting at most 8 levels) besides its logger's bindings, whatever reaches
 * it (request metadata, an upstream's error text, a caller's strings).
 */
export const LOG_BOUNDS: Bounds = { total: 16_384, string: 4_096, depth: 8 };

const serializeError = pino.stdSerializers.err;

/**
 * Bounds every logged object in pino's own `formatters.log`, which sees each call's object
 * before it is written, so no call site has to. An error is serialized first (message,
 * stack, causes), as pino's `err` serializer would, so its text is bounded too.
 */
function boundedLogObject(object: Record<string, unknown>): Record<string, unknown> {
  const { err } = object;
  const plain = err instanceof Error ? { ...object, err: serializeError(err) } : object;
  return bounded(plain, LOG_BOUNDS) as Record<string, unknown>;
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, remove: true },
      formatters: { log: boundedLogObject },
      serializers: {
        // Serialized by the formatter already: pino's would take the bounded copy for an
        // error again (its type "Object").
        err: (err: unknown) => err,
        // The message is not part of the logged object: its serializer bounds it (a message
        // pino takes from an error's text included).
        msg: (msg: unknown) => (typeof msg === 'string' ? cut(msg, LOG_BOUNDS.string) : msg),
      },
    },
    destination,
  );
}

/** How much of any one caller-sent value a log line carries. */
export const LOGGED_INPUT_MAX = 64;

/**
 * Caller input fit for a log line: control characters removed and at most `max`
 * characters, so an unauthenticated request cannot write megabytes or forge lines.
 */
export function logSafe(value: unknown, max = LOGGED_INPUT_MAX): string {
  const text = String(value);
  // Only a prefix is cleaned: a 9 MB value costs no more than a short one.
  const clean = text.slice(0, max * 4).replace(CONTROL_CHARACTERS, '');
  return clean.length > max || text.length > max * 4 ? `${clean.slice(0, max)}…` : clean;
}

const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** A URL fit for a log line or an error message: its password masked. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparseable URL>';
  }
}

/**
 * The base of a per-request context that hands on its request's logger, made when something
 * first logs. A class rather than an object literal with `get log()`: V8 defines a literal's
 * accessor at run time for every object it makes (~0.5 KB and ~1 µs each, several per
 * request); a prototype's getter costs nothing per object.
 */
export class LogsThrough {
  constructor(private readonly logSource: { readonly log: Logger }) {}

  get log(): Logger {
    return this.logSource.log;
  }
}
