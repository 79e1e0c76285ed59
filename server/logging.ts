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
