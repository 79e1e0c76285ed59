// Document → text that keeps its structure: headings as Markdown `#` lines, passages
// separated by blank lines, which is what the chunker splits on. PDF through unpdf (pdf.js),
// Word through mammoth (to HTML, so headings survive), HTML through html-to-text: these
// parsers need the whole file. Plain text and Markdown stream instead (`streamText`): decoded
// and split into blocks as the file's parts arrive, so their size costs no memory.
import type { FormatCallback } from 'html-to-text';
import { readFile } from 'node:fs/promises';
import type { getDocumentProxy } from 'unpdf';
import { firstHeading, splitBlocks } from './chunker.js';
import { UnreadableDocumentError, type DocumentFormat } from './formats.js';

export interface ParsedDocument {
  /** Markdown-like text: `#` headings, blank lines between passages. */
  text: string;
  /** The document's own title when it has one (PDF metadata, HTML <title>, first heading). */
  title: string | null;
}

/** Headings keep their level as Markdown `#`s, so sections survive into chunks. */
const markdownHeading: FormatCallback = (element, walk, builder, options) => {
  const level = Number(/^h([1-6])$/i.exec(element.name ?? '')?.[1] ?? 1);
  builder.openBlock({ leadingLineBreaks: options.leadingLineBreaks ?? 2 });
  builder.addInline(`${'#'.repeat(level)} `);
  walk(element.children, builder);
  builder.closeBlock({ trailingLineBreaks: options.trailingLineBreaks ?? 2 });
};

const headingSelectors = [1, 2, 3, 4, 5, 6].map((n) => ({ selector: `h${n}`, format: 'markdownHeading' }));

/**
 * A saved web page's furniture, which is not its content: navigation, menus, breadcrumbs,
 * sidebars, footers and forms, by element and by the class and id names sites give them. Left
 * in, every page of a site repeats it, and it opens each page's first passage.
 */
const BOILERPLATE = [
  'nav',
  'footer',
  'aside',
  'form',
  'noscript',
  'button',
  '[role=navigation]',
  ...['nav', 'menu', 'breadcrumb', 'sidebar', 'footer'].flatMap((word) => [`[class*=${word}]`, `[id*=${word}]`]),
];

// The whole-file parsers load on first use, once: a server that is never sent a PDF, Word or
// HTML file does not carry them in its idle memory.
let parsers: ReturnType<typeof loadParsers> | undefined;
const loaded = () => (parsers ??= loadParsers());

async function loadParsers() {
  const [{ compile }, { default: mammoth }, { default: JSZip }, unpdf] = await Promise.all([
    import('html-to-text'),
    import('mammoth'),
    import('jszip'),
    import('unpdf'),
  ]);
  const htmlToText = compile({
    wordwrap: false,
    formatters: { markdownHeading },
    limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
    selectors: [
      ...headingSelectors,
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'head', format: 'skip' },
      ...BOILERPLATE.map((selector) => ({ selector, format: 'skip' })),
      // A table row per line of cells: html-to-text otherwise glues the cells' words together
      // ("ItemUpper LimitComment"), and its text tables wrap long cells across their columns.
      { selector: 'table', format: 'block' },
      { selector: 'tr', format: 'block' },
      { selector: 'td', format: 'inlineSurround', options: { suffix: ' | ' } },
      { selector: 'th', format: 'inlineSurround', options: { suffix: ' | ' } },
    ],
  });
  return { htmlToText, mammoth, JSZip, unpdf };
}

/** A document of a format parsed whole (every format but plain text and Markdown). */
export async function parseDocument(bytes: Buffer, format: Exclude<DocumentFormat, StreamedFormat>, fileName: string): Promise<ParsedDocument> {
  const { htmlToText, mammoth } = await loaded();
  switch (format) {
    case 'html': {
      const html = decodeUtf8(bytes, fileName);
      const text = normalize(htmlToText(html));
      return { text, title: htmlTitle(html, htmlToText) ?? firstHeading(text) };
    }
    case 'docx': {
      const { value: html } = await mammoth.convertToHtml({ buffer: bytes }).catch((error: Error) => {
        throw new UnreadableDocumentError(`${fileName} could not be read as a Word document: ${error.message}`);
      });
      const text = normalize(htmlToText(html));
      return { text, title: firstHeading(text) };
    }
    case 'pdf':
      return parsePdf(bytes, fileName);
  }
}

/**
 * Refuses at upload (400, rather than FAILED later) a PDF or Word file that its parser cannot
 * open, at a bounded cost: a PDF's structure and first page, a Word file's archive and main
 * part, no text extraction. What still fails later: a PDF with no text layer (a scan), a page
 * after the first that is damaged, a main part that is not valid XML.
 */
export async function checkOpens(path: string, format: DocumentFormat, fileName: string): Promise<void> {
  if (format !== 'pdf' && format !== 'docx') return;
  const bytes = await readFile(path);
  const { JSZip } = await loaded();
  if (format === 'pdf') {
    await withPdf(bytes, fileName, (pdf) => pdf.getPage(1));
    return;
  }
  try {
    const zip = await JSZip.loadAsync(bytes);
    // The main part is where the package's relationships say (word/document.xml as Word writes it).
    const rels = (await zip.file('_rels/.rels')?.async('string')) ?? '';
    const target = /<Relationship\b[^>]*\/officeDocument"[^>]*>/.exec(rels)?.[0].match(/Target="\/?([^"]+)"/)?.[1] ?? 'word/document.xml';
    const main = zip.file(target);
    if (!main) throw new Error(`it has no ${target}`);
    await main.async('uint8array');
  } catch (error) {
    throw new UnreadableDocumentError(`${fileName} could not be read as a Word document: ${(error as Error).message}`);
  }
}

/** Whether a format is read as a stream (`streamText`) rather than whole (`parseDocument`). */
export const isStreamed = (format: DocumentFormat): format is StreamedFormat => format === 'txt' || format === 'md';

type StreamedFormat = 'txt' | 'md';

/** How much of a text is searched for its title (its first heading). */
const TITLE_SCAN_CHARS = 64 * 1024;

/** A text or Markdown file given in parts: its title, then its blocks (the pieces between blank lines) as they decode. */
export async function streamText(parts: AsyncIterable<Uint8Array>, fileName: string): Promise<{ title: string | null; blocks: AsyncIterable<string> }> {
  const source = decodedBlocks(parts, fileName)[Symbol.asyncIterator]();
  // The blocks of the file's start are read ahead to find the title, then given first.
  const head: string[] = [];
  let headChars = 0;
  let ended = false;
  while (headChars < TITLE_SCAN_CHARS) {
    const next = await source.next();
    if (next.done) {
      ended = true;
      break;
    }
    head.push(next.value);
    headChars += next.value.length + 2;
  }
  const title = firstHeading(head.join('\n\n'));
  async function* blocks(): AsyncGenerator<string> {
    yield* head;
    if (ended) return;
    for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
  }
  return { title, blocks: blocks() };
}

/** UTF-8 decoded as it arrives, cut at blank lines; each block normalized as `normalize` does a whole text. */
async function* decodedBlocks(parts: AsyncIterable<Uint8Array>, fileName: string): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  const decode = (part?: Uint8Array) => {
    try {
      return part ? decoder.decode(part, { stream: true }) : decoder.decode();
    } catch {
      throw new UnreadableDocumentError(`${fileName} is not valid UTF-8 text`);
    }
  };
  let pending = '';
  for await (const part of parts) {
    pending += decode(part);
    // A CR at the end may be the first half of a CRLF split between parts: it waits for the next.
    const complete = pending.endsWith('\r') ? pending.length - 1 : pending.length;
    const blocks = splitBlocks(pending.slice(0, complete).replace(/\r\n?/g, '\n'));
    pending = blocks.pop()! + pending.slice(complete);
    for (const block of blocks) {
      const text = normalize(block);
      if (text) yield text;
    }
  }
  const last = normalize((pending + decode()).replace(/\r\n?/g, '\n'));
  if (last) yield last;
}

async function parsePdf(bytes: Buffer, fileName: string): Promise<ParsedDocument> {
  const { extractText, getMeta } = (await loaded()).unpdf;
  return withPdf(bytes, fileName, async (pdf) => {
    const [{ text: pages }, meta] = await Promise.all([extractText(pdf, { mergePages: false }), getMeta(pdf).catch(() => null)]);
    const title = typeof meta?.info?.Title === 'string' && meta.info.Title.trim() ? meta.info.Title.trim() : null;
    return { text: normalize(pages.join('\n\n')), title };
  });
}

type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

/** Runs `use` on the opened PDF; any failure to read it is an UnreadableDocumentError. */
async function withPdf<T>(bytes: Buffer, fileName: string, use: (pdf: PdfDocument) => Promise<T>): Promise<T> {
  try {
    // pdf.js takes ownership of the array it is given: hand it a copy.
    const pdf = await (await loaded()).unpdf.getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      return await use(pdf);
    } finally {
      await pdf.destroy();
    }
  } catch (error) {
    throw new UnreadableDocumentError(`${fileName} could not be read as a PDF: ${(error as Error).message}`);
  }
}

function decodeUtf8(bytes: Buffer, fileName: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new UnreadableDocumentError(`${fileName} is not valid UTF-8 text`);
  }
}

/** One newline convention, no trailing spaces, at most one blank line in a row. */
function normalize(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\f\v]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}


function htmlTitle(html: string, htmlToText: (html: string) => string): string | null {
  const match = /<title[^>]*>([^<]*)<\/title>/i.exec(html.slice(0, 64 * 1024));
  const title = match?.[1]?.replace(/\s+/g, ' ').trim();
  return title ? htmlToText(title) : null;
}
