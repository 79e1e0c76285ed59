// Splits a parsed document into passages for the index. Passages follow the document's own
// boundaries: a heading always starts a new passage, paragraphs are kept whole and packed
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
const TRAIL_SEPARATOR = ' › ';

interface Piece {
  text: string;
  tokens: number;
}

export function chunkText(text: string, options: ChunkOptions): TextChunk[] {
  const chunks: TextChunk[] = [];
  const headings: string[] = [];
  let trail: Piece | null = null;
  let body: Piece[] = [];
  let bodyTokens = 0;

  const flush = () => {
    if (body.length === 0) return;
    const parts = trail ? [trail, ...body] : body;
    chunks.push({ content: parts.map((p) => p.text).join('\n\n'), tokenCount: parts.reduce((sum, p) => sum + p.tokens, 0) });
    body = [];
    bodyTokens = 0;
  };

  for (const block of text.split(/\n[ \t]*\n/)) {
    let rest = block.trim();
    if (!rest) continue;
    // A heading line opens a section; text right below it (no blank line) is its first paragraph.
    const firstLine = rest.split('\n', 1)[0]!;
    const heading = HEADING.exec(firstLine);
    if (heading) {
      flush();
      const level = heading[1]!.length;
      headings.length = Math.min(headings.length, level - 1);
      headings[level - 1] = heading[2]!.trim();
      const label = headings.filter(Boolean).join(TRAIL_SEPARATOR);
      const tokens = estimateTokens(label);
      // A trail that would crowd out the passage itself is left off.
      trail = tokens <= options.maxTokens / 4 ? { text: label, tokens } : null;
      rest = rest.slice(firstLine.length).trim();
      if (!rest) continue;
    }
    const room = options.maxTokens - (trail?.tokens ?? 0);
    for (const piece of fitting(rest, room)) {
      if (body.length > 0 && bodyTokens + piece.tokens > Math.min(room, options.targetTokens - (trail?.tokens ?? 0))) flush();
      body.push(piece);
      bodyTokens += piece.tokens;
    }
  }
  flush();
  return chunks;
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
