// The name of an uploaded file as the platform keeps it, cleaned where the upload is received
// (multipart.ts; the real-time upload's `filename`) so the item, the answers and the logs all
// see the same name. A name is the caller's text shown to other people: a right-to-left
// override (U+202E) makes `report\u202Efdp.exe` read as `reportexe.pdf`, control characters
// forge lines, and 5,000 characters fill every listing.

/** Bytes of UTF-8 a file name keeps: what common file systems allow for one name. */
export const FILE_NAME_MAX_BYTES = 255;

/** An extension longer than this is not kept apart when a name is cut: it is not a real one. */
const EXTENSION_MAX_BYTES = 32;

/**
 * Control characters (C0, DEL, C1), the bidirectional controls (marks U+200E/U+200F/U+061C,
 * embeddings and overrides U+202A-U+202E, isolates U+2066-U+2069) and the line and paragraph
 * separators.
 */
const UNSAFE = /[\p{Cc}\p{Bidi_Control}\u2028\u2029]/gu;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** `name` without unsafe characters, cut to FILE_NAME_MAX_BYTES keeping its extension. */
export function cleanFileName(name: string): string {
  const clean = name.replace(UNSAFE, '');
  if (Buffer.byteLength(clean) <= FILE_NAME_MAX_BYTES) return clean;
  const dot = clean.lastIndexOf('.');
  const extension = dot > 0 && Buffer.byteLength(clean.slice(dot)) <= EXTENSION_MAX_BYTES ? clean.slice(dot) : '';
  return prefixWithin(clean.slice(0, clean.length - extension.length), FILE_NAME_MAX_BYTES - Buffer.byteLength(extension)) + extension;
}

/** The longest prefix of whole characters (grapheme clusters: an accent stays with its letter) within `bytes`. */
function prefixWithin(text: string, bytes: number): string {
  let end = 0;
  let used = 0;
  for (const { segment } of graphemes.segment(text)) {
    used += Buffer.byteLength(segment);
    if (used > bytes) break;
    end += segment.length;
  }
  return text.slice(0, end);
}
