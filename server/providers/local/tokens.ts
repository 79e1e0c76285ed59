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
/** The same runs in ASCII text, where Unicode classes cost several times more for the same answer. */
const ASCII_RUN = /([A-Za-z]+)|([0-9]+)|[^\sA-Za-z0-9]/g;
const ASCII = /^[\x00-\x7f]*$/;

/** Same runs, each with the whitespace before it, so the pieces concatenate to the text. */
const PIECE = new RegExp(`\\s*(?:${RUN_SOURCE})|\\s+`, 'gu');

/** Fixed cost of one image part (OpenAI's low-detail price). */
export const IMAGE_TOKENS = 85;
/** Role and separators per message, plus the primer of the reply. */
const MESSAGE_OVERHEAD = 4;
const REPLY_PRIMER = 3;

export function estimateTokens(text: string): number {
  let total = 0;
  // A CJK character or a symbol is one token.
  for (const [, letters, digits] of text.matchAll(ASCII.test(text) ? ASCII_RUN : RUN)) {
    total += letters !== undefined ? Math.max(1, Math.round(letters.length / 4.5)) : digits !== undefined ? Math.ceil(digits.length / 3) : 1;
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
