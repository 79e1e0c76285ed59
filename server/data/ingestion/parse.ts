// Document → text that keeps its structure: headings as Markdown `#` lines, passages
// separated by blank lines, which is what the chunker splits on. PDF through unpdf (pdf.js),
// Word through mammoth (to HTML, so headings survive), HTML through html-to-text, text as
// UTF-8. Runs in a parse worker thread (parse-worker.ts), never on the request thread, and
// checks the file's content limits (limits.ts) as it goes: PDF pages before each page is read,
// Word parts' inflated bytes while they inflate, HTML nesting before the tree is built, and
// the characters extracted.
import type { FormatCallback } from 'html-to-text';
import type { getDocumentProxy } from 'unpdf';
import { Chunker, firstHeading, splitBlocks, type ChunkOptions, type TextChunk } from './chunker.js';
import { UnreadableDocumentError, type DocumentFormat } from './formats.js';
import { checkLimit, type ContentLimits } from './limits.js';

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
let parsers: ReturnType<typeof importParsers> | undefined;
const loaded = () => (parsers ??= importParsers());
/** Loads the parsers now rather than on first use (a parse thread, as it starts). */
export const loadParsers = async (): Promise<void> => void (await loaded());

async function importParsers() {
  const [{ compile }, { default: mammoth }, { default: JSZip }, { Parser }, unpdf] = await Promise.all([
    import('html-to-text'),
    import('mammoth'),
    import('jszip'),
    import('htmlparser2'),
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
  return { htmlToText, mammoth, JSZip, Parser, unpdf };
}

/** A document of any accepted format, within `limits` (else LimitExceededError). */
export async function parseDocument(bytes: Uint8Array, format: DocumentFormat, fileName: string, limits: ContentLimits): Promise<ParsedDocument> {
  const { htmlToText, mammoth } = await loaded();
  switch (format) {
    case 'txt':
    case 'md': {
      const text = normalize(decodeUtf8(bytes, fileName, limits));
      return { text, title: firstHeading(text.slice(0, TITLE_SCAN_CHARS)) };
    }
    case 'html': {
      const html = decodeUtf8(bytes, fileName, limits);
      await checkHtmlDepth(html, limits);
      const text = normalize(htmlToText(html));
      checkLimit(limits, 'maxChars', text.length);
      return { text, title: htmlTitle(html, htmlToText) ?? firstHeading(text) };
    }
    case 'docx': {
      await checkInflatedBytes(bytes, fileName, limits);
      // Images are left out of the text (see the img selector): never inflated.
      const options = { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) };
      const { value: html } = await mammoth.convertToHtml({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) }, options).catch((error: Error) => {
        throw new UnreadableDocumentError(`${fileName} could not be read as a Word document: ${error.message}`);
      });
      const text = normalize(htmlToText(html));
      checkLimit(limits, 'maxChars', text.length);
      return { text, title: firstHeading(text) };
    }
    case 'pdf':
      return parsePdf(bytes, fileName, limits);
  }
}

/** A document's title and passages, within `limits`: what ingestion indexes. */
export async function documentPassages(
  bytes: Uint8Array,
  format: DocumentFormat,
  fileName: string,
  chunk: ChunkOptions,
  limits: ContentLimits,
): Promise<{ title: string | null; passages: TextChunk[] }> {
  const { title, text } = await parseDocument(bytes, format, fileName, limits);
  const chunker = new Chunker(chunk);
  const passages: TextChunk[] = [];
  for (const block of splitBlocks(text)) {
    passages.push(...chunker.push(block));
    checkLimit(limits, 'maxPassages', passages.length);
  }
  passages.push(...chunker.end());
  checkLimit(limits, 'maxPassages', passages.length);
  return { title, passages };
}

/** How much of a text is searched for its title (its first heading). */
const TITLE_SCAN_CHARS = 64 * 1024;

/**
 * Refuses HTML nested deeper than the limit before any tree is built: html-to-text walks the
 * tree recursively, and 200,000 nested elements held a thread for half a minute before
 * overflowing its stack. htmlparser2's tokenizer (the one html-to-text parses with) closes
 * implied and void elements as the tree builder would, so the depth counted is the tree's.
 */
async function checkHtmlDepth(html: string, limits: ContentLimits): Promise<void> {
  const { Parser } = await loaded();
  let depth = 0;
  const parser = new Parser({
    onopentag() {
      checkLimit(limits, 'maxHtmlDepth', ++depth);
    },
    onclosetag() {
      depth--;
    },
  });
  parser.end(html);
}

/**
 * Inflates each XML part of a Word file (the parts mammoth reads) while counting, and stops
 * at the limit: a part that declares 1 KB and inflates to gigabytes (a zip bomb) is refused
 * after at most one inflated block past the limit, never held whole.
 */
async function checkInflatedBytes(bytes: Uint8Array, fileName: string, limits: ContentLimits): Promise<void> {
  const { JSZip } = await loaded();
  const zip = await JSZip.loadAsync(bytes).catch((error: Error) => {
    throw new UnreadableDocumentError(`${fileName} could not be read as a Word document: ${error.message}`);
  });
  let inflated = 0;
  for (const entry of Object.values(zip.files)) {
    if (entry.dir || !/\.(xml|rels)$/i.test(entry.name)) continue;
    await new Promise<void>((resolve, reject) => {
      // JSZip's own streaming inflate (pako, a block at a time): not in its type declarations.
      const stream = (entry as unknown as InflatingEntry).internalStream('uint8array');
      stream
        .on('data', (data: Uint8Array) => {
          inflated += data.length;
          try {
            checkLimit(limits, 'maxInflatedBytes', inflated);
          } catch (error) {
            stream.pause();
            reject(error);
          }
        })
        .on('error', (error: Error) => reject(new UnreadableDocumentError(`${fileName} could not be read as a Word document: ${error.message}`)))
        .on('end', () => resolve())
        .resume();
    });
  }
}

/** The part of a JSZip entry's stream API used here. */
interface InflatingEntry {
  internalStream(type: 'uint8array'): InflatingStream;
}
interface InflatingStream {
  on(event: 'data', listener: (data: Uint8Array) => void): InflatingStream;
  on(event: 'error', listener: (error: Error) => void): InflatingStream;
  on(event: 'end', listener: () => void): InflatingStream;
  pause(): InflatingStream;
  resume(): InflatingStream;
}

async function parsePdf(bytes: Uint8Array, fileName: string, limits: ContentLimits): Promise<ParsedDocument> {
  const { getMeta } = (await loaded()).unpdf;
  return withPdf(bytes, fileName, async (pdf) => {
    checkLimit(limits, 'maxPages', pdf.numPages);
    // A page at a time, so that a file's cost stops at the character limit.
    const pages: string[] = [];
    let chars = 0;
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      page.cleanup();
      const text = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
      chars += text.length;
      checkLimit(limits, 'maxChars', chars);
      pages.push(text);
    }
    const meta = await getMeta(pdf).catch(() => null);
    const title = typeof meta?.info?.Title === 'string' && meta.info.Title.trim() ? meta.info.Title.trim() : null;
    return { text: normalize(pages.join('\n\n')), title };
  });
}

type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

/** Runs `use` on the opened PDF; any failure to read it is an UnreadableDocumentError. */
async function withPdf<T>(bytes: Uint8Array, fileName: string, use: (pdf: PdfDocument) => Promise<T>): Promise<T> {
  try {
    // pdf.js takes ownership of the array it is given: hand it a copy.
    const pdf = await (await loaded()).unpdf.getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      return await use(pdf);
    } finally {
      await pdf.destroy();
    }
  } catch (error) {
    if (error instanceof UnreadableDocumentError) throw error;
    throw new UnreadableDocumentError(`${fileName} could not be read as a PDF: ${(error as Error).message}`);
  }
}

function decodeUtf8(bytes: Uint8Array, fileName: string, limits: ContentLimits): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new UnreadableDocumentError(`${fileName} is not valid UTF-8 text`);
  }
  checkLimit(limits, 'maxChars', text.length);
  return text;
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
