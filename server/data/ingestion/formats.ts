// Which document format a file is, from its content first (magic bytes, via file-type) and
// its name second. Binary formats are recognized by their signature whatever the name says;
// a file without a signature is text, and must look like text. Checked at upload, so a file
// the pipeline cannot read is refused there (400) rather than failing later, at a bounded
// cost: only the file's head and tail are read, nothing is parsed or inflated (that is the
// parse threads' work, under the file's limits).
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { fileTypeFromFile } from 'file-type';

export type DocumentFormat = 'txt' | 'md' | 'html' | 'pdf' | 'docx';

export const MEDIA_TYPES: Record<DocumentFormat, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  html: 'text/html',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

const FORMAT_OF_MEDIA_TYPE = new Map(Object.entries(MEDIA_TYPES).map(([format, type]) => [type, format as DocumentFormat]));

/** A file the platform cannot ingest: its reason is shown to the caller (400) or recorded on the item. */
export class UnreadableDocumentError extends Error {
  override readonly name = 'UnreadableDocumentError';
}

/** How much of a text file is checked at upload: enough to tell text from binary. */
const TEXT_SNIFF_BYTES = 64 * 1024;

const TEXT_EXTENSIONS: Record<string, DocumentFormat> = {
  '.txt': 'txt',
  '.text': 'txt',
  '.md': 'md',
  '.markdown': 'md',
  '.html': 'html',
  '.htm': 'html',
  '.xhtml': 'html',
};

export function formatOfMediaType(mediaType: string | null | undefined): DocumentFormat | undefined {
  return mediaType ? FORMAT_OF_MEDIA_TYPE.get(mediaType) : undefined;
}

/** The format of the file at `path` (named `fileName` by its uploader), or UnreadableDocumentError. */
export async function detectFormat(path: string, fileName: string, size: number): Promise<DocumentFormat> {
  if (size === 0) throw new UnreadableDocumentError(`${fileName} is empty`);
  const extension = extname(fileName).toLowerCase();
  const sniffed = await fileTypeFromFile(path);
  if (sniffed?.mime === MEDIA_TYPES.pdf) return 'pdf';
  if (sniffed?.mime === MEDIA_TYPES.docx) return 'docx';
  if (sniffed && !sniffed.mime.startsWith('text/') && sniffed.mime !== 'application/xml') {
    const legacy = sniffed.ext === 'cfb' && extension === '.doc' ? ' (legacy Word .doc: save it as .docx)' : '';
    throw new UnreadableDocumentError(`${fileName} is ${sniffed.mime}${legacy}; accepted: text, Markdown, HTML, PDF, Word .docx`);
  }
  if (extension === '.pdf' || extension === '.docx') {
    throw new UnreadableDocumentError(`${fileName} is not a valid ${extension.slice(1).toUpperCase()} file (its content has no ${extension.slice(1).toUpperCase()} signature)`);
  }
  const head = await readHead(path, TEXT_SNIFF_BYTES);
  if (!looksLikeText(head)) {
    throw new UnreadableDocumentError(`${fileName} is neither text nor a recognized document format; accepted: text, Markdown, HTML, PDF, Word .docx`);
  }
  return TEXT_EXTENSIONS[extension] ?? (looksLikeHtml(head) ? 'html' : 'txt');
}

/**
 * Refuses a PDF or Word file cut short (the usual way a file arrives broken) from its tail
 * alone: a PDF ends with its `%%EOF` marker, a Word file (a zip) with its central directory's
 * end record. What fails later, in its parse thread: damage inside the file, a PDF without a
 * text layer (a scan), a Word file without its main part.
 */
export async function checkIntact(path: string, format: DocumentFormat, fileName: string, size: number): Promise<void> {
  if (format === 'pdf') {
    const tail = await readAt(path, Math.max(0, size - PDF_TAIL_BYTES), PDF_TAIL_BYTES);
    if (!tail.includes('%%EOF')) throw new UnreadableDocumentError(`${fileName} could not be read as a PDF: it has no end-of-file marker (%%EOF): cut short?`);
  }
  if (format === 'docx') {
    const start = Math.max(0, size - ZIP_TAIL_BYTES);
    const tail = await readAt(path, start, ZIP_TAIL_BYTES);
    const end = tail.lastIndexOf(ZIP_END_SIGNATURE);
    // The end record says where the central directory is: it must lie inside the file, before the record.
    const directoryEnd = end >= 0 && end + 22 <= tail.length ? tail.readUInt32LE(end + 16) + tail.readUInt32LE(end + 12) : Infinity;
    if (directoryEnd > start + end) throw new UnreadableDocumentError(`${fileName} could not be read as a Word document: its zip directory is missing or damaged: cut short?`);
  }
}

/** pdf.js looks for the end of a PDF in its last kilobyte, as this does. */
const PDF_TAIL_BYTES = 1024;
/** A zip's end record: 22 bytes and a comment of at most 65,535. */
const ZIP_TAIL_BYTES = 22 + 65_535;
const ZIP_END_SIGNATURE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

const readHead = (path: string, bytes: number) => readAt(path, 0, bytes);

async function readAt(path: string, position: number, bytes: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buffer, 0, bytes, position);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** UTF-8 without NUL bytes (a multi-byte character cut at the end of the sample is fine). */
export function looksLikeText(sample: Buffer): boolean {
  if (sample.includes(0)) return false;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    decoder.decode(sample, { stream: true });
    return true;
  } catch {
    return false;
  }
}

function looksLikeHtml(sample: Buffer): boolean {
  return /^\s*(<!doctype html|<html[\s>])/i.test(sample.subarray(0, 1024).toString('utf8').replace(/^\uFEFF/, ''));
}
