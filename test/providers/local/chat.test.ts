import { describe, expect, it } from 'vitest';
import { HashingEmbedder } from '../../../server/providers/local/hashing-embedder.js';
import { createLocalProvider } from '../../../server/providers/local/local-provider.js';
import { estimateTokens } from '../../../server/providers/local/tokens.js';
import { ProviderError } from '../../../server/providers/types.js';
import { ask, collect, ctx, provider, request } from './support.js';

const passages = [
  'Use these passages to answer.',
  '[1] Bananas are rich in potassium and grow in tropical climates.',
  '[2] The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889 for the World Fair.',
  '[3] Mount Everest is the highest mountain above sea level.',
].join('\n');
const grounded = (question: string) => request([{ role: 'system', content: passages }, { role: 'user', content: question }]);

describe('local chat', () => {
  it('answers the same request the same way, honest about being the local model', async () => {
    const first = await provider.chat(ask('What does hope mean?'), ctx());
    const second = await provider.chat(ask('What does hope mean?'), ctx());
    expect(second).toEqual(first);
    expect(first.content).toMatch(/built-in local model/);
    expect(first.content).toContain('What does hope mean?');
    expect(first.finishReason).toBe('stop');
    expect(first.usage!.completionTokens).toBe(estimateTokens(first.content!));
    expect(first.usage!.promptTokens).toBeGreaterThan(estimateTokens('What does hope mean?'));
  });

  it('answers grounded requests with the relevant passage sentence, not the others', async () => {
    const result = await provider.chat(grounded('How tall is the Eiffel Tower?'), ctx());
    expect(result.content).toContain('The Eiffel Tower in Paris is 330 metres tall.');
    expect(result.content).not.toMatch(/Bananas|Everest/);
    const other = await provider.chat(grounded('Which mountain is the highest?'), ctx());
    expect(other.content).toContain('Mount Everest is the highest mountain above sea level.');
    expect(other.content).not.toMatch(/Eiffel|Bananas/);
  });

  it('says so when the context does not cover the question', async () => {
    const result = await provider.chat(grounded('Who wrote Hamlet?'), ctx());
    expect(result.content).toMatch(/built-in local model/);
    expect(result.content).toMatch(/Nothing in the provided context/);
  });

  it('streams deltas that add up to the non-streamed answer, then finishes once with usage', async () => {
    const req = grounded('When was the Eiffel Tower completed, and how tall is it?');
    const whole = await provider.chat(req, ctx());
    const events = await collect(provider.chatStream(req, ctx()));
    const deltas = events.filter((e) => e.type === 'delta');
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.map((e) => e.type === 'delta' && e.content).join('')).toBe(whole.content);
    expect(events.filter((e) => e.type === 'finish')).toEqual([{ type: 'finish', finishReason: 'stop', usage: whole.usage }]);
    expect(events.at(-1)?.type).toBe('finish');
  });

  it('cuts at maxTokens with finishReason length, streamed and not', async () => {
    const whole = await provider.chat(ask('Explain the meaning of hope in detail.'), ctx());
    const cut = await provider.chat(ask('Explain the meaning of hope in detail.', { maxTokens: 7 }), ctx());
    expect(cut.finishReason).toBe('length');
    expect(cut.usage!.completionTokens).toBeLessThanOrEqual(7);
    expect(cut.usage!.completionTokens).toBeGreaterThanOrEqual(6);
    expect(whole.content!.startsWith(cut.content!)).toBe(true);
    const events = await collect(provider.chatStream(ask('Explain the meaning of hope in detail.', { maxTokens: 7 }), ctx()));
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
    // A limit above the answer's length changes nothing.
    const roomy = await provider.chat(ask('Explain the meaning of hope in detail.', { maxTokens: 10_000 }), ctx());
    expect(roomy).toEqual(whole);
  });

  it('stops before the first stop sequence, which is left out', async () => {
    const whole = (await provider.chat(ask('What does hope mean?'), ctx())).content!;
    const result = await provider.chat(ask('What does hope mean?', { stop: ['zzz', 'rule-based', 'model'] }), ctx());
    expect(result.content).toBe(whole.slice(0, whole.indexOf('model')));
    expect(result.finishReason).toBe('stop');
    expect(result.usage!.completionTokens).toBe(estimateTokens(result.content!));
  });

  it('continues after an assistantPrefix: prefix + continuation is the whole answer', async () => {
    const req = grounded('How tall is the Eiffel Tower?');
    const whole = (await provider.chat(req, ctx())).content!;
    for (const cut of [0, 1, 17, Math.floor(whole.length / 2), whole.length - 1, whole.length]) {
      const prefix = whole.slice(0, cut);
      const rest = await provider.chat({ ...req, assistantPrefix: { text: prefix, mode: 'native' } }, ctx());
      expect(prefix + rest.content).toBe(whole);
      const streamed = await collect(provider.chatStream({ ...req, assistantPrefix: { text: prefix, mode: 'native' } }, ctx()));
      expect(prefix + streamed.map((e) => (e.type === 'delta' ? e.content : '')).join('')).toBe(whole);
    }
  });

  it('refuses to continue a prefix it did not write', async () => {
    const error = await provider.chat(ask('What does hope mean?', { assistantPrefix: { text: 'Hope is a feeling', mode: 'native' } }), ctx()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).kind).toBe('prefix_refused');
  });

  it('stops streaming when the call is aborted and waits tokenDelayMs between tokens', async () => {
    const slow = createLocalProvider({ embedder: new HashingEmbedder(), tokenDelayMs: 20 });
    const controller = new AbortController();
    const seen: string[] = [];
    const started = Date.now();
    const run = (async () => {
      for await (const event of slow.chatStream(ask('What does hope mean?'), { ...ctx(), signal: controller.signal })) {
        if (event.type === 'delta') seen.push(event.content ?? '');
        if (seen.length === 3) controller.abort();
      }
    })();
    await expect(run).rejects.toThrow();
    expect(seen).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
  });
});
