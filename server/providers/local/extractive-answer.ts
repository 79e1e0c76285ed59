// Grounded answers of the local model: when a system message carries retrieved passages as
// `<sources>` / `<source id="n">` blocks (written by server/data/grounding/prompt.ts), the
// answer is the passages' sentences that best match the question, quoted as they are and,
// when the block asks for it (`cite="true"`), each followed by the `[n]` of its source. So
// the embedded default gives an answer a reader can check against the citations.
import type { ChatMessage } from '../types.js';
import { contentTerms } from './terms.js';

const MAX_SENTENCES = 3;
const SOURCES = /<sources\b([^>]*)>([\s\S]*?)<\/sources>/;
const SOURCE = /<source\b([^>]*)>\n?([\s\S]*?)\n?<\/source>/g;

interface Grounding {
  publisher: string;
  cite: boolean;
  sources: { id: number; text: string }[];
}

/** The extractive answer when the conversation is grounded, else undefined. */
export function groundedAnswer(messages: readonly ChatMessage[], question: string): string | undefined {
  const grounding = messages
    .filter((m) => m.role === 'system' && typeof m.content === 'string')
    .map((m) => readGrounding(m.content as string))
    .findLast((g) => g !== undefined);
  if (!grounding) return undefined;
  const { publisher, cite, sources } = grounding;
  if (sources.length === 0) return `No passage of ${publisher}'s content matches this question, so I cannot answer it from that content.`;

  const sentences = sources.flatMap((source) => sentencesOf(source.text).map((text) => ({ source: source.id, text })));
  const picked = best(sentences, new Set(contentTerms(question)));
  const quote = (s: { source: number; text: string }) => (cite ? withMarker(s.text, s.source) : s.text);
  if (picked.length > 0) return picked.map(quote).join(' ');
  const closest = sentences[0];
  return closest
    ? `None of the passages found in ${publisher}'s content answers this directly. The closest says: ${quote(closest)}`
    : `The passages found in ${publisher}'s content are empty, so I cannot answer from them.`;
}

function readGrounding(text: string): Grounding | undefined {
  const block = SOURCES.exec(text);
  if (!block) return undefined;
  const attrs = attributes(block[1]);
  const sources = [...block[2].matchAll(SOURCE)].map((m) => ({
    id: Number(attributes(m[1]).id),
    text: m[2].replace(/&lt;(\/?sources?\b)/gi, '<$1'),
  }));
  return { publisher: attrs.publisher ?? 'the publisher', cite: attrs.cite === 'true', sources: sources.filter((s) => Number.isInteger(s.id)) };
}

function attributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [, name, value] of text.matchAll(/(\w+)="([^"]*)"/g)) {
    out[name] = value.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  }
  return out;
}

/** Sentences of a passage (list markers and heading marks dropped), at least three words each. */
export function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.replace(/^\s*(?:#+|[-*•]|\d+[.)])\s*/, '').trim())
    .filter((s) => s.split(/\s+/).length >= 3);
}

/**
 * The sentences sharing the most question terms, weighted by how rare each term is among
 * the sentences (so "Sabbath" counts more than a word every passage uses): those scoring at
 * least half the best, at most a few, best first.
 */
function best<T extends { text: string }>(sentences: T[], asked: Set<string>): T[] {
  const termSets = sentences.map((s) => new Set(contentTerms(s.text)));
  const frequency = new Map<string, number>();
  for (const terms of termSets) for (const term of terms) if (asked.has(term)) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  const scores = termSets.map((terms) => [...terms].reduce((sum, term) => sum + (asked.has(term) ? Math.log(1 + sentences.length / frequency.get(term)!) : 0), 0));
  const top = Math.max(0, ...scores);
  if (top === 0) return [];
  return scores
    .map((score, index) => ({ score, index }))
    .filter(({ score }) => score >= top / 2)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, MAX_SENTENCES)
    .map(({ index }) => sentences[index]);
}

/** `Rest is received.` → `Rest is received [1].` (the marker inside the sentence's end). */
function withMarker(sentence: string, source: number): string {
  const end = /[.!?]+["”’)]*$/.exec(sentence);
  return end ? `${sentence.slice(0, end.index)} [${source}]${end[0]}` : `${sentence} [${source}]`;
}
