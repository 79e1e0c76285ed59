import { describe, expect, it } from 'vitest';
import { estimateMessageTokens, estimateTokens, IMAGE_TOKENS, splitTokens } from '../../../server/providers/local/tokens.js';

describe('token estimator', () => {
  it('counts words, punctuation and digits roughly like a BPE tokenizer', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('   \n ')).toBe(0);
    expect(estimateTokens('Hello, world!')).toBe(4);
    // A long word costs several tokens, a digit run one per three digits.
    expect(estimateTokens('internationalization')).toBe(4);
    expect(estimateTokens('1234567')).toBe(3);
    // Each CJK character is a token of its own.
    expect(estimateTokens('東京タワー')).toBe(5);
  });

  it('counts ASCII text by character codes exactly as the run pattern does', () => {
    // The pattern's own definition of runs, applied to random ASCII (every code unit, with
    // runs of letters, digits and spaces made likely) and to text that turns non-ASCII midway.
    const reference = (text: string) => {
      let total = 0;
      for (const [, letters, digits] of text.matchAll(/([A-Za-z]+)|([0-9]+)|[^\sA-Za-z0-9]/g)) {
        total += letters !== undefined ? Math.max(1, Math.round(letters.length / 4.5)) : digits !== undefined ? Math.ceil(digits.length / 3) : 1;
      }
      return total;
    };
    let seed = 42;
    // High bits of the generator: its low bits repeat with short periods.
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor((seed / 2 ** 31) * n));
    const alphabet = ['a', 'Z', 'q', '7', '0', ' ', '\t', '\n', '\v', '\f', '\r', '.', '{', '"', '\x00', '\x1f', '\x7f', '_', '-'];
    for (let n = 0; n < 5_000; n++) {
      const text = Array.from({ length: next(60) }, () => (next(4) === 0 ? String.fromCharCode(next(128)) : alphabet[next(alphabet.length)])).join('');
      expect(estimateTokens(text), JSON.stringify(text)).toBe(reference(text));
    }
    // Non-ASCII anywhere: the Unicode runs, where "é" continues a word.
    expect(estimateTokens('caf\u00e9 au lait')).toBe(3);
    expect(estimateTokens('abcdefghi\u00e9')).toBe(2);
    expect(estimateTokens('abcdefghi')).toBe(2);
  });

  it('is about four characters per token on English prose', () => {
    const prose = 'The quick brown fox jumps over the lazy dog while the farmer watches from the porch. '.repeat(20);
    const ratio = prose.length / estimateTokens(prose);
    expect(ratio).toBeGreaterThan(3.5);
    expect(ratio).toBeLessThan(5);
  });

  it('splits text into pieces that concatenate back and sum to the same estimate', () => {
    const text = '  Résumé: {"a": [1, 2]}\n\nnext line…  ';
    const pieces = splitTokens(text);
    expect(pieces.join('')).toBe(text);
    expect(pieces.reduce((sum, piece) => sum + estimateTokens(piece), 0)).toBe(estimateTokens(text));
  });

  it('adds per-message overhead, names, tool calls and a fixed cost per image', () => {
    const base = estimateMessageTokens([]);
    const one = estimateMessageTokens([{ role: 'user', content: 'Hello there' }]);
    expect(one - base).toBe(estimateTokens('Hello there') + 4);
    const withImage = estimateMessageTokens([
      { role: 'user', content: [{ type: 'text', text: 'Hello there' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
    ]);
    expect(withImage - one).toBe(IMAGE_TOKENS);
    const call = estimateMessageTokens([
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
    ]);
    expect(call - base).toBe(4 + estimateTokens('lookup') + estimateTokens('{"q":"x"}'));
  });
});
