// One cheap, shared token estimator: the local provider reports usage with it and the
// gateway checks context windows with it. It approximates BPE tokenizers without a
// vocabulary: a short word is one token, long words ~4.5 characters per token, digits come
// in groups of three, every punctuation mark and every CJK character is its own token,
// whitespace is free (BPE folds it into the next word). Slight overestimates are fine:
// context checks should err on the safe side.
import type { ChatMessage } from '../types.js';

/** Word-ish runs: letters (one run per CJK character), digit runs, single other symbols. */
const CJK = '[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}]';
const LETTERS = `(?:(?!${CJK})[\\p{L}\\p{M}])+`;
const DIGITS = '\\p{N}+';
/** Letters and digits captured: one pass tells each run's kind (the estimator's hot loop). */
const RUN_SOURCE = `${CJK}|(${LETTERS})|(${DIGITS})|[^\\s\\p{L}\\p{M}\\p{N}]`;
const RUN = new RegExp(RUN_SOURCE, 'gu');

/** Same runs, each with the whitespace before it, so the pieces concatenate to the text. */
const PIECE = new RegExp(`\\s*(?:${RUN_SOURCE})|\\s+`, 'gu');

/** Fixed cost of one image part (OpenAI's low-detail price). */
export const IMAGE_TOKENS = 85;
/** Role and separators per message, plus the primer of the reply. */
const MESSAGE_OVERHEAD = 4;
const REPLY_PRIMER = 3;

const lettersTokens = (length: number) => Math.max(1, Math.round(length / 4.5));
const digitsTokens = (length: number) => Math.ceil(length / 3);

export function estimateTokens(text: string): number {
  const ascii = estimateAscii(text);
  if (ascii >= 0) return ascii;
  let total = 0;
  // A CJK character or a symbol is one token.
  for (const [, letters, digits] of text.matchAll(RUN)) {
    total += letters !== undefined ? lettersTokens(letters.length) : digits !== undefined ? digitsTokens(digits.length) : 1;
  }
  return total;
}

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** ASCII whitespace as `\s` has it: tab, line feed, vertical tab, form feed, carriage return, space. */
const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * The same runs in ASCII text, scanned by character code: every prompt goes through here
 * (routing, billing, usage), and the pattern allocated a match and its strings per run
 * (~10 KB a request) where this allocates nothing. -1 at the first non-ASCII character.
 */
function estimateAscii(text: string): number {
  let total = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return -1;
    const start = i++;
    if (isLetter(c)) {
      while (i < text.length && isLetter(text.charCodeAt(i))) i++;
      total += lettersTokens(i - start);
    } else if (isDigit(c)) {
      while (i < text.length && isDigit(text.charCodeAt(i))) i++;
      total += digitsTokens(i - start);
    } else if (!isSpace(c)) {
      total += 1;
    }
  }
  return total;
}

/**
 * Splits text into the pieces a stream yields: each is one estimator run with its leading
 * whitespace, so summing `estimateTokens` over pieces equals the estimate of the whole.
 */
export function splitTokens(text: string): string[] {
  return text.match(PIECE) ?? [];
}

export function estimateMessageTokens(messages: ChatMessage[]): number {
  let total = REPLY_PRIMER;
  for (const message of messages) {
    total += MESSAGE_OVERHEAD;
    if (message.name) total += estimateTokens(message.name);
    if (typeof message.content === 'string') total += estimateTokens(message.content);
    else for (const part of message.content ?? []) total += part.type === 'text' ? estimateTokens(part.text) : IMAGE_TOKENS;
    for (const call of message.tool_calls ?? []) total += estimateTokens(call.function.name) + estimateTokens(call.function.arguments);
  }
  return total;
}
