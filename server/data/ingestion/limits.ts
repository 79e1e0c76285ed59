// What one file may cost to ingest, enforced where the work happens (the parse worker, see
// parse-worker.ts): a file past a limit fails for good (no retry can pass it) with a reason
// that names the limit and the setting that raises it, e.g.
// `limit_exceeded: pages > 2000 (INGEST_MAX_PAGES)`.
import { UnreadableDocumentError } from './formats.js';

export interface ContentLimits {
  /** PDF pages (INGEST_MAX_PAGES). */
  maxPages: number;
  /** Bytes inflated from a Word file's parts, counted while inflating (INGEST_MAX_INFLATED_BYTES). */
  maxInflatedBytes: number;
  /** Characters of text extracted from a file (INGEST_MAX_CHARS). */
  maxChars: number;
  /** Element nesting depth of an HTML file (INGEST_MAX_HTML_DEPTH). */
  maxHtmlDepth: number;
  /** Passages of one item (INGEST_MAX_PASSAGES). */
  maxPassages: number;
}

/** Setting that raises each limit, named in the failure reason. */
const SETTING: Record<keyof ContentLimits, string> = {
  maxPages: 'INGEST_MAX_PAGES',
  maxInflatedBytes: 'INGEST_MAX_INFLATED_BYTES',
  maxChars: 'INGEST_MAX_CHARS',
  maxHtmlDepth: 'INGEST_MAX_HTML_DEPTH',
  maxPassages: 'INGEST_MAX_PASSAGES',
};

const MEASURE: Record<keyof ContentLimits, string> = {
  maxPages: 'pages',
  maxInflatedBytes: 'inflated bytes',
  maxChars: 'extracted characters',
  maxHtmlDepth: 'HTML nesting depth',
  maxPassages: 'passages',
};

/** How every reason of a file over a limit begins. */
export const LIMIT_EXCEEDED = 'limit_exceeded:';

/** The reason of a file over a limit, naming the limit's setting. */
export const limitReason = (measure: string, limit: number | string, setting: string) => `${LIMIT_EXCEEDED} ${measure} > ${limit} (${setting})`;

/** A file over a limit: never retried (UnreadableDocumentError), its reason names the limit. */
export class LimitExceededError extends UnreadableDocumentError {
  constructor(measure: string, limit: number | string, setting: string) {
    super(limitReason(measure, limit, setting));
  }
}

/** Throws LimitExceededError when `value` is past `limits[which]`. */
export function checkLimit(limits: ContentLimits, which: keyof ContentLimits, value: number): void {
  if (value > limits[which]) throw new LimitExceededError(MEASURE[which], limits[which], SETTING[which]);
}
