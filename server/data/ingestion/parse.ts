// Document → text that keeps its structure: headings as Markdown `#` lines, passages
// separated by blank lines, which is what the chunker splits on. PDF through unpdf (pdf.js),
// Word through mammoth (to HTML, so headings survive), HTML through html-to-text.
import { compile, type FormatCallback } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText, getDocumentProxy, getMeta } from 'unpdf';
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

const htmlToText = compile({
  wordwrap: false,
  formatters: { markdownHeading },
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
  selectors: [
    ...headingSelectors,
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'nav', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'head', format: 'skip' },
  ],
});

export async function parseDocument(bytes: Buffer, format: DocumentFormat, fileName: string): Promise<ParsedDocument> {
  switch (format) {
    case 'txt':
    case 'md': {
      const text = normalize(decodeUtf8(bytes, fileName));
      return { text, title: format === 'md' ? firstHeading(text) : null };
    }
    case 'html': {
      const html = decodeUtf8(bytes, fileName);
      const text = normalize(htmlToText(html));
      return { text, title: htmlTitle(html) ?? firstHeading(text) };
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

async function parsePdf(bytes: Buffer, fileName: string): Promise<ParsedDocument> {
  try {
    // pdf.js takes ownership of the array it is given: hand it a copy.
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      const [{ text: pages }, meta] = await Promise.all([extractText(pdf, { mergePages: false }), getMeta(pdf).catch(() => null)]);
      const title = typeof meta?.info?.Title === 'string' && meta.info.Title.trim() ? meta.info.Title.trim() : null;
      return { text: normalize(pages.join('\n\n')), title };
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

function firstHeading(text: string): string | null {
  return /^#{1,6}[ \t]+(.+)$/m.exec(text.slice(0, 64 * 1024))?.[1]?.trim() || null;
}

function htmlTitle(html: string): string | null {
  const match = /<title[^>]*>([^<]*)<\/title>/i.exec(html.slice(0, 64 * 1024));
  const title = match?.[1]?.replace(/\s+/g, ' ').trim();
  return title ? htmlToText(title) : null;
}
