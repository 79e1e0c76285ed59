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
