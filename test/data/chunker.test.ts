// The chunker's bounds: no passage over maxTokens (by the same estimator the embedder's
// limit is checked with), headings always start a passage and lead it as a trail, a
// paragraph too long for a passage is cut at sentences, then words, then characters, and
// feeding blocks one at a time gives exactly the passages of the whole text.
import { describe, expect, it } from 'vitest';
import { Chunker, chunkText, firstHeading, splitBlocks } from '../../server/data/ingestion/chunker.js';
import { chunkOptions } from '../../server/data/ingestion/pipeline.js';
import { estimateTokens } from '../../server/providers/local/tokens.js';

const sentence = (n: number) => `Sentence number ${n} talks about rest, work and the long evening light.`;
const longParagraph = Array.from({ length: 80 }, (_, n) => sentence(n)).join(' ');
const runOnSentence = `${Array.from({ length: 300 }, (_, n) => `word${n}`).join(' ')}.`;
const hugeWord = `https://example.org/${'a1b2c3d4'.repeat(400)}`;
const cjk = '静かな朝に祈りを捧げる。'.repeat(60);
const DOCUMENT = [
  '# Book',
  'A short opening paragraph.',
  '## Chapter one',
  longParagraph,
  '### A section with a heading trail',
  runOnSentence,
  hugeWord,
  cjk,
  `## ${'Very long heading words '.repeat(30)}`,
  'Text under a heading too long to repeat.',
].join('\n\n');

describe('chunker', () => {
  it.each([16, 64, 200, 400])('never makes a passage over maxTokens = %i, and counts tokens as the estimator does', (maxTokens) => {
    const passages = chunkText(DOCUMENT, { maxTokens, targetTokens: Math.min(200, maxTokens) });
    expect(passages.length).toBeGreaterThan(0);
    for (const p of passages) {
      expect(p.tokenCount, p.content.slice(0, 80)).toBe(estimateTokens(p.content));
      expect(p.tokenCount, p.content.slice(0, 80)).toBeLessThanOrEqual(maxTokens);
    }
    // Nothing is lost: every word of the document is in some passage.
    const words = new Set(passages.flatMap((p) => p.content.split(/\s+/)));
    for (const word of ['opening', 'word299', 'number', 'Text']) expect(words.has(word) || [...words].some((w) => w.includes(word))).toBe(true);
  });

  it('cuts a long paragraph at sentence ends, packing whole sentences up to the target', () => {
    const passages = chunkText(`# T\n\n${longParagraph}`, { maxTokens: 100, targetTokens: 80 });
    expect(passages.length).toBeGreaterThan(5);
    for (const p of passages) {
      const body = p.content.replace(/^T\n\n/, '');
      expect(p.content.startsWith('T\n\n')).toBe(true);
      // Whole sentences only: each piece starts a sentence and ends one.
      expect(body).toMatch(/^Sentence number \d+/);
      expect(body).toMatch(/light\.$/);
    }
    const rejoined = passages.map((p) => p.content.replace(/^T\n\n/, '')).join(' ');
    expect(rejoined).toBe(longParagraph);
  });

  it('cuts a sentence too long for a passage at words, and a word too long at characters', () => {
    const byWords = chunkText(runOnSentence, { maxTokens: 32, targetTokens: 32 });
    expect(byWords.length).toBeGreaterThan(1);
    expect(byWords.map((p) => p.content).join(' ')).toBe(runOnSentence);
    const byCharacters = chunkText(hugeWord, { maxTokens: 32, targetTokens: 32 });
    expect(byCharacters.length).toBeGreaterThan(1);
    expect(byCharacters.map((p) => p.content).join('\n\n').replace(/\n\n/g, '')).toBe(hugeWord);
  });

  it('starts a passage at every heading and leads it with the heading trail; a trail over a quarter of the limit is left off', () => {
    const passages = chunkText('# A\n\none.\n\n## B\n\ntwo.\n\n### C\n\nthree.\n\n## D\n\nfour.', { maxTokens: 400, targetTokens: 200 });
    expect(passages.map((p) => p.content)).toEqual(['A\n\none.', 'A › B\n\ntwo.', 'A › B › C\n\nthree.', 'A › D\n\nfour.']);
    const crowded = chunkText(`# ${'word '.repeat(30)}\n\nbody text.`, { maxTokens: 100, targetTokens: 100 });
    expect(crowded.map((p) => p.content)).toEqual(['body text.']);
  });

  it('reads underlined titles (Markdown setext, reStructuredText) as headings, levels in the order their styles appear', () => {
    const rst = [
      '=======\nManual\n=======',
      'Intro text.',
      'Install\n=======',
      'Run the installer.',
      'On Linux\n--------\nUse the package manager.',
      'Upgrade\n=======',
      'Read the notes.',
      'A sentence over a short rule\n---',
      'is no heading.',
    ].join('\n\n');
    const passages = chunkText(rst, { maxTokens: 400, targetTokens: 10 });
    expect(passages.map((p) => p.content)).toEqual([
      'Manual\n\nIntro text.',
      'Manual › Install\n\nRun the installer.',
      'Manual › Install › On Linux\n\nUse the package manager.',
      'Manual › Upgrade\n\nRead the notes.',
      'Manual › Upgrade\n\nA sentence over a short rule\n---',
      'Manual › Upgrade\n\nis no heading.',
    ]);
    expect(firstHeading(rst)).toBe('Manual');
    expect(firstHeading('Plain text\n\nwith no heading at all.')).toBeNull();
    expect(firstHeading('Notes\n=====\n\nbody')).toBe('Notes');
  });

  it('given block by block, makes exactly the passages of the whole text', () => {
    const options = { maxTokens: 120, targetTokens: 80 };
    const chunker = new Chunker(options);
    const streamed = [...splitBlocks(DOCUMENT).flatMap((block) => chunker.push(block)), ...chunker.end()];
    expect(streamed).toEqual(chunkText(DOCUMENT, options));
  });

  it('fits the embedder: the limit is the model input when smaller than 400, never under 16', () => {
    expect(chunkOptions(8192)).toEqual({ maxTokens: 400, targetTokens: 200 });
    expect(chunkOptions(128)).toEqual({ maxTokens: 128, targetTokens: 128 });
    expect(chunkOptions(4)).toEqual({ maxTokens: 16, targetTokens: 16 });
  });
});
