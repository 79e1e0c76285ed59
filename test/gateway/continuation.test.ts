// Joining a continuation asked for in a user turn to the partial answer the client already
// has: what the model repeats is trimmed, an answer started over is refused.
import { describe, expect, it } from 'vitest';
import { joinedContinuation } from '../../server/gateway/continuation.js';
import { ProviderError, type ChatStreamEvent } from '../../server/providers/types.js';

async function* events(...pieces: (string | ChatStreamEvent)[]): AsyncGenerator<ChatStreamEvent> {
  for (const piece of pieces) yield typeof piece === 'string' ? { type: 'delta', content: piece } : piece;
}

const finish: ChatStreamEvent = { type: 'finish', finishReason: 'stop' };

/** What the client reads after `partial`: the joined events, then the rest of the stream. */
async function joined(partial: string, ...pieces: (string | ChatStreamEvent)[]): Promise<string> {
  const iterator = events(...pieces);
  let text = '';
  for (const event of await joinedContinuation(iterator, partial)) if (event.type === 'delta') text += event.content ?? '';
  for await (const event of { [Symbol.asyncIterator]: () => iterator }) if (event.type === 'delta') text += event.content ?? '';
  return partial + text;
}

describe('a continuation asked for in a user turn', () => {
  it.each([
    ['goes straight on', 'The quick brown', [' fox jumps.', finish]],
    ['repeats the last word', 'The quick brown', ['brown', ' fox jumps.', finish]],
    ['restarts the word that was cut', 'The quick bro', ['brown fox', ' jumps.', finish]],
    ['repeats the last words, split across pieces', 'The quick brown', ['qu', 'ick br', 'own fox jumps.', finish]],
    ['repeats all of it', 'The quick brown', ['The quick brown fox', ' jumps.', finish]],
    ['repeats from inside a word, at length', 'The quick brown', ['uick brown', ' fox jumps.', finish]],
  ] as const)('%s', async (_name, partial, pieces) => {
    expect(await joined(partial, ...pieces)).toBe('The quick brown fox jumps.');
  });

  it('keeps a piece that merely begins like the end of the answer', async () => {
    // " brown" would match the end, but "browser" is new text.
    expect(await joined('I use a brown', ' browser.', finish)).toBe('I use a brown browser.');
  });

  it.each([
    ['in other words', 'The quick brown dog sleeps.'],
    ['and stopping short of where it was cut', 'The quick brown'],
  ])('refuses an answer started over %s', async (_name, text) => {
    const error = await joinedContinuation(events(text, finish), 'The quick brown fox').catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).kind).toBe('prefix_refused');
  });

  it('is an empty stream when nothing came', async () => {
    const error = await joinedContinuation(events(), 'The quick').catch((e) => e);
    expect((error as ProviderError).kind).toBe('empty_stream');
  });
});
