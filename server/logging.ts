import pino, { type Logger } from 'pino';

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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, remove: true } }, destination);
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
