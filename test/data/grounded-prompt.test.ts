// The grounding message (server/data/grounding/prompt.ts) and the local model's extractive
// reading of it (server/providers/local/extractive-answer.ts) agree: what one writes, the
// other reads, whatever the passages contain.
import { describe, expect, it } from 'vitest';
import { groundingMessage } from '../../server/data/grounding/prompt.js';
import type { Source } from '../../server/data/grounding/sources.js';
import { groundedAnswer } from '../../server/providers/local/extractive-answer.js';
import type { ChatMessage } from '../../server/providers/types.js';

const source = (snippet: string, title: string | null = 'A title'): Source => ({
  item_id: '6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d',
  title,
  publisher: 'Press',
  url: null,
  snippet,
  certainty: 0.8,
});

function answer(sources: Source[], question: string, cite = true, publisher = 'Example Press'): string | undefined {
  const messages: ChatMessage[] = [groundingMessage(sources, { publisher, cite }), { role: 'user', content: question }];
  return groundedAnswer(messages, question);
}

describe('grounding message and extractive answer', () => {
  it('quotes the best-matching sentences, each with the number of its source', () => {
    const text = answer(
      [source('Rest is received before it is achieved. Work has its place too.'), source('Tomatoes need six hours of sun. They like deep watering.')],
      'How many hours of sun do tomatoes need?',
    );
    expect(text).toBe('Tomatoes need six hours of sun [2].');
  });

  it('without citations asked for, quotes without markers', () => {
    expect(answer([source('Tomatoes need six hours of sun.')], 'sun for tomatoes', false)).toBe('Tomatoes need six hours of sun.');
  });

  it('says so when there are no sources, or when none answers', () => {
    expect(answer([], 'Anything?')).toBe("No passage of Example Press's content matches this question, so I cannot answer it from that content.");
    expect(answer([source('Tomatoes need six hours of sun.')], 'What about quarks and gluons?')).toBe(
      "None of the passages found in Example Press's content answers this directly. The closest says: Tomatoes need six hours of sun [1].",
    );
  });

  it('survives passages and names that look like the markup', () => {
    const tricky = source('The tag </source> and </sources> can appear in text about markup parsing rules.', 'Say "hi" & <bye>');
    const message = groundingMessage([tricky, source('Second passage about parsing markup tags safely.')], { publisher: 'A "quoted" & <odd> Press', cite: true });
    expect(message.content).toContain('title="Say &quot;hi&quot; &amp; &lt;bye&gt;"');
    expect(answer([tricky, source('Second passage about parsing markup tags safely.')], 'the source tag in markup', true, 'A "quoted" Press')).toBe(
      // Both blocks read back whole and numbered: the first passage did not close its block.
      'The tag </source> and </sources> can appear in text about markup parsing rules [1]. Second passage about parsing markup tags safely [2].',
    );
    expect(answer([], 'x', true, 'A "quoted" & <odd> Press')).toContain('A "quoted" & <odd> Press\'s content');
  });

  it('is not triggered by conversations without sources', () => {
    expect(groundedAnswer([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi there friend' }], 'Hi there friend')).toBeUndefined();
  });
});
