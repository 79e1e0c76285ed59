// The event translation on its own (server/responses/stream.ts), fed a scripted upstream:
// refusal parts, text after a refusal, a function call after text (the message closes
// first), grounding annotations before output_text.done, and a failure mid-item.
import { describe, expect, it } from 'vitest';
import type { GatewayStream, Served } from '../../server/gateway/gateway-service.js';
import { ProviderError, type ChatStreamEvent } from '../../server/providers/types.js';
import { responseEvents, type StreamOptions } from '../../server/responses/stream.js';
import type { StreamEvent } from '../../server/responses/types.js';
import { eventProblems } from '../support/contract.js';

const served = { model: { id: 'm' }, deployment: { id: 'd' }, provider: 'fake' } as unknown as Served;

function upstream(events: ChatStreamEvent[], failWith?: Error, reasoningTokens?: number): GatewayStream {
  return {
    served,
    attempts: [{ deploymentId: 'd', modelId: 'm', outcome: 'ok', usage: { promptTokens: 7, completionTokens: 5, ...(reasoningTokens ? { reasoningTokens } : {}) } }],
    async *[Symbol.asyncIterator]() {
      yield* events;
      if (failWith) throw failWith;
    },
  };
}

async function run(events: ChatStreamEvent[], options: Partial<StreamOptions> = {}, failWith?: Error, reasoningTokens?: number): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  const stored: unknown[] = [];
  for await (const event of responseEvents({
    frame: { id: 'resp_1', object: 'response', created_at: 1, model: 'm', instructions: null, previous_response_id: null, metadata: {}, provider: 'fake', routing_mechanism: 'direct_model_selection', tradition: null },
    upstream: upstream(events, failWith, reasoningTokens),
    moderation: null,
    internal: () => false,
    runInternal: async function* () {},
    annotations: () => [],
    describeError: (error) => ({ error: { code: 2009, name: 'CONNECTION_DROPPED', message: (error as Error).message, retryable: true, category: 'provider', description: 'dropped' }, traceId: 'trc_1' }),
    finished: async (response) => void stored.push(response),
    ...options,
  })) {
    expect(eventProblems('createResponse', event), event.type).toEqual([]);
    out.push(event);
  }
  expect(out.map((e) => e.sequence_number)).toEqual(out.map((_, i) => i));
  return out;
}

const types = (events: StreamEvent[]) => events.map((e) => e.type).filter((t, i, all) => !(t.endsWith('.delta') && all[i - 1] === t));

describe('responseEvents', () => {
  it('a refusal, then text: two parts of one message, each added, streamed and done in order', async () => {
    const events = await run([
      { type: 'delta', refusal: 'I cannot ' },
      { type: 'delta', refusal: 'help with that.' },
      { type: 'delta', content: 'But here is something else.' },
      { type: 'finish', finishReason: 'stop' },
    ]);
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.refusal.delta',
      'response.refusal.done',
      'response.content_part.done',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const final = events.at(-1) as Extract<StreamEvent, { type: 'response.completed' }>;
    expect(final.response.output[0]).toMatchObject({
      type: 'message',
      status: 'completed',
      content: [
        { type: 'refusal', refusal: 'I cannot help with that.' },
        { type: 'output_text', text: 'But here is something else.', annotations: [] },
      ],
    });
    expect(final.response.output_text).toBe('But here is something else.');
    expect(final.response.usage).toMatchObject({ input_tokens: 7, output_tokens: 5, total_tokens: 12 });
  });

  it('text then a function call: the message is done before the call is added; annotations come before output_text.done', async () => {
    const events = await run(
      [
        { type: 'delta', content: 'Let me check [1].' },
        { type: 'delta', toolCalls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] },
        { type: 'delta', toolCalls: [{ index: 0, function: { arguments: '{"q":' } }] },
        { type: 'delta', toolCalls: [{ index: 0, function: { arguments: '"x"}' } }] },
        { type: 'finish', finishReason: 'tool_calls' },
      ],
      { annotations: (text) => [{ type: 'file_citation', file_id: 'item-1', filename: 'Source', index: text.indexOf('[1]') }] },
    );
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.annotation.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const annotation = events.find((e) => e.type === 'response.output_text.annotation.added')!;
    expect(annotation).toMatchObject({ annotation_index: 0, annotation: { file_id: 'item-1', index: 13 } });
    const final = events.at(-1) as Extract<StreamEvent, { type: 'response.completed' }>;
    expect(final.response.output[1]).toMatchObject({ type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}', status: 'completed' });
  });

  it('a failure mid-text: error, then response.failed keeping the partial text, item incomplete', async () => {
    const events = await run([{ type: 'delta', content: 'Half an ans' }], {}, new ProviderError('connection_dropped', 'cut'));
    expect(types(events).slice(-2)).toEqual(['error', 'response.failed']);
    const failed = events.at(-1) as Extract<StreamEvent, { type: 'response.failed' }>;
    expect(failed).toMatchObject({ trace_id: 'trc_1', error: { name: 'CONNECTION_DROPPED' } });
    expect(failed.response).toMatchObject({ status: 'failed', error: { code: 'CONNECTION_DROPPED', message: 'cut' } });
    expect(failed.response.output[0]).toMatchObject({ status: 'incomplete', content: [{ type: 'output_text', text: 'Half an ans' }] });
  });

  it('reasoning tokens in the usage: a reasoning item added and done before the terminal event', async () => {
    const events = await run([{ type: 'delta', content: 'Forty-two.' }, { type: 'finish', finishReason: 'stop' }], {}, undefined, 4);
    expect(types(events).slice(-3)).toEqual(['response.output_item.added', 'response.output_item.done', 'response.completed']);
    const final = events.at(-1) as Extract<StreamEvent, { type: 'response.completed' }>;
    expect(final.response.output.map((item) => item.type)).toEqual(['message', 'reasoning']);
    expect(final.response.usage?.output_tokens_details?.reasoning_tokens).toBe(4);
  });

  it('two parallel function calls: each is done before the next is added, as OpenAI streams them', async () => {
    const events = await run([
      { type: 'delta', toolCalls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":' } }] },
      { type: 'delta', toolCalls: [{ index: 0, function: { arguments: '"Oslo"}' } }] },
      { type: 'delta', toolCalls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } }] },
      { type: 'finish', finishReason: 'tool_calls' },
    ]);
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const done = events.filter((e) => e.type === 'response.function_call_arguments.done') as Extract<StreamEvent, { type: 'response.function_call_arguments.done' }>[];
    expect(done.map((e) => [e.output_index, e.arguments])).toEqual([
      [0, '{"city":"Oslo"}'],
      [1, '{"city":"Rome"}'],
    ]);
    const final = events.at(-1) as Extract<StreamEvent, { type: 'response.completed' }>;
    expect(final.response.output).toMatchObject([
      { type: 'function_call', call_id: 'call_a', status: 'completed' },
      { type: 'function_call', call_id: 'call_b', status: 'completed' },
    ]);
  });

  it('text after a function call: the call is done before the message is added', async () => {
    const events = await run([
      { type: 'delta', toolCalls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
      { type: 'delta', content: 'Looking it up.' },
      { type: 'finish', finishReason: 'tool_calls' },
    ]);
    expect(types(events).slice(2, 7)).toEqual([
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
    ]);
  });

  it('an image that fails to draw: response.failed shows its call failed, not still in progress', async () => {
    const events = await run([{ type: 'delta', toolCalls: [{ index: 0, id: 'call_i', type: 'function', function: { name: 'image_generation', arguments: '{"prompt":"a cat"}' } }] }, { type: 'finish', finishReason: 'tool_calls' }], {
      internal: (name) => name === 'image_generation',
      runInternal: async function* () {
        const done = Promise.reject(new ProviderError('server', 'image model down'));
        done.catch(() => undefined);
        yield { started: () => ({ type: 'image_generation_call' as const, id: 'ig_1', status: 'in_progress' as const, result: null }), done };
      },
    });
    expect(types(events).slice(-4)).toEqual(['response.image_generation_call.in_progress', 'response.image_generation_call.generating', 'error', 'response.failed']);
    const failed = events.at(-1) as Extract<StreamEvent, { type: 'response.failed' }>;
    expect(failed.response.output).toMatchObject([{ type: 'image_generation_call', id: 'ig_1', status: 'failed', result: null }]);
  });
});
