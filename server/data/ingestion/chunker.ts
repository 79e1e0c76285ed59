// Splits a parsed document into passages for the index. Passages follow the document's own
// boundaries: a heading (Markdown `#`, or a title underlined as Markdown's setext and
// reStructuredText write them) always starts a new passage, paragraphs are kept whole and packed
// up to a target size, and only a paragraph too long for the embedder's input is cut (at
// sentences, then words). Each passage starts with the trail of headings it sits under, so
// it can be understood (and embedded) on its own and a citation shows where it comes from.
import { estimateTokens } from '../../providers/local/tokens.js';

export interface ChunkOptions {
  /** Passages are packed up to about this many tokens. */
  targetTokens: number;
  /** Hard limit: no passage exceeds it (the embedder's input limit). */
  maxTokens: number;
}

export interface TextChunk {
  content: string;
  tokenCount: number;
}

const HEADING = /^(#{1,6})[ \t]+(.+)$/;
/** A line of one repeated punctuation character: the rule under (and over) a setext or reST title. */
const RULE = /^([=\-~^"'`#*+:.])\1{2,}[ \t]*$/;

/** A heading block's text and style: `#`s, or its rule character (with `over` when the title is overlined too). */
interface HeadingLine {
  text: string;
  /** How much of the block the heading takes (its lines). */
  length: number;
  style: string;
}

/**
 * The heading a block starts with, if any: a `#` line, a title over a rule (Markdown setext,
 * reST), or a title between two equal rules (reST). A rule must be at least as long as the
 * title (as reST requires), which keeps a line of dashes under a sentence from reading as one.
 */
function headingAt(block: string): HeadingLine | null {
  const [first = '', second = '', third = ''] = block.split('\n', 3);
  const hashes = HEADING.exec(first);
  if (hashes) return { text: hashes[2]!.trim(), length: first.length, style: hashes[1]! };
  const title = (line: string) => line.trim() !== '' && !RULE.test(line) && !/^\s/.test(line);
  if (RULE.test(first) && title(second) && third.trimEnd() === first.trimEnd() && first.trimEnd().length >= second.trimEnd().length) {
    return { text: second.trim(), length: first.length + second.length + third.length + 2, style: `over${first[0]}` };
  }
  if (title(first) && RULE.test(second) && second.trimEnd().length >= first.trimEnd().length) {
    return { text: first.trim(), length: first.length + second.length + 1, style: second[0]! };
  }
  return null;
}

/** The first heading of a text (its title when it has no other), in any of the styles the chunker reads. */
export function firstHeading(text: string): string | null {
  for (const block of splitBlocks(text)) {
    const heading = headingAt(block.trim());
    if (heading) return heading.text || null;
  }
  return null;
}
const TRAIL_SEPARATOR = ' › ';

interface Piece {
  text: string;
  tokens: number;
}

/** All passages of a whole text. */
export function chunkText(text: string, options: ChunkOptions): TextChunk[] {
  const chunker = new Chunker(options);
  const chunks = splitBlocks(text).flatMap((block) => chunker.push(block));
  return [...chunks, ...chunker.end()];
}

/** A text's blocks: the pieces between blank lines. */
export function splitBlocks(text: string): string[] {
  return text.split(BLANK_LINE);
}

const BLANK_LINE = /\n[ \t]*\n/;

/**
 * Passages from a text given a block at a time (the pieces between blank lines), so a long
 * document streams through: `push` returns the passages a block completes, `end` the last.
 */
export class Chunker {
  private readonly headings: string[] = [];
  /** Underline styles in the order met: as in reST, the first style seen is level 1, the next level 2. */
  private readonly ruleStyles: string[] = [];
  private trail: Piece | null = null;
  private body: Piece[] = [];
  private bodyTokens = 0;

  constructor(private readonly options: ChunkOptions) {}

  push(block: string): TextChunk[] {
    const out: TextChunk[] = [];
    let rest = block.trim();
    if (!rest) return out;
    // A heading opens a section; text right below it (no blank line) is its first paragraph.
    const heading = headingAt(rest);
    if (heading) {
      this.flush(out);
      const level = this.levelOf(heading.style);
      this.headings.length = Math.min(this.headings.length, level - 1);
      this.headings[level - 1] = heading.text;
      const label = this.headings.filter(Boolean).join(TRAIL_SEPARATOR);
      const tokens = estimateTokens(label);
      // A trail that would crowd out the passage itself is left off.
      this.trail = tokens <= this.options.maxTokens / 4 ? { text: label, tokens } : null;
      rest = rest.slice(heading.length).trim();
      if (!rest) return out;
    }
    const trailTokens = this.trail?.tokens ?? 0;
    const room = this.options.maxTokens - trailTokens;
    for (const piece of fitting(rest, room)) {
      if (this.body.length > 0 && this.bodyTokens + piece.tokens > Math.min(room, this.options.targetTokens - trailTokens)) this.flush(out);
      this.body.push(piece);
      this.bodyTokens += piece.tokens;
    }
    return out;
  }

  private levelOf(style: string): number {
    if (style.startsWith('#')) return style.length;
    if (!this.ruleStyles.includes(style)) this.ruleStyles.push(style);
    return Math.min(6, this.ruleStyles.indexOf(style) + 1);
  }

  end(): TextChunk[] {
    const out: TextChunk[] = [];
    this.flush(out);
    return out;
  }

  private flush(out: TextChunk[]): void {
    if (this.body.length === 0) return;
    const parts = this.trail ? [this.trail, ...this.body] : this.body;
    out.push({ content: parts.map((p) => p.text).join('\n\n'), tokenCount: parts.reduce((sum, p) => sum + p.tokens, 0) });
    this.body = [];
    this.bodyTokens = 0;
  }
}

/** The paragraph whole when it fits in `room` tokens, else cut at sentences, then words, then characters. */
function fitting(paragraph: string, room: number): Piece[] {
  const tokens = estimateTokens(paragraph);
  if (tokens <= room) return [{ text: paragraph, tokens }];
  return pack(paragraph.split(/(?<=[.!?…])\s+/), ' ', room, (sentence) =>
    pack(sentence.split(/\s+/), ' ', room, (word) => hardCut(word, room)),
  );
}

/** Joins consecutive units while they fit; a unit too big on its own goes through `tooBig`. */
function pack(units: string[], joiner: string, room: number, tooBig: (unit: string) => Piece[]): Piece[] {
  const out: Piece[] = [];
  let current: string[] = [];
  let currentTokens = 0;
  const close = () => {
    if (current.length > 0) out.push({ text: current.join(joiner), tokens: currentTokens });
    current = [];
    currentTokens = 0;
  };
  for (const unit of units) {
    if (!unit) continue;
    const tokens = estimateTokens(unit);
    if (tokens > room) {
      close();
      out.push(...tooBig(unit));
      continue;
    }
    if (currentTokens + tokens > room) close();
    current.push(unit);
    currentTokens += tokens;
  }
  close();
  return out;
}

/** Last resort for a "word" longer than a passage (a URL, base64): fixed slices that fit. */
function hardCut(word: string, room: number): Piece[] {
  const out: Piece[] = [];
  let size = Math.max(1, room);
  for (let start = 0; start < word.length; ) {
    const text = word.slice(start, start + size);
    const tokens = estimateTokens(text);
    if (tokens > room && size > 1) {
      size = Math.max(1, Math.floor(size / 2));
      continue;
    }
    out.push({ text, tokens });
    start += text.length;
  }
  return out;
}
