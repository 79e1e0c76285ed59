// Shared by the local provider tests: a call context, a provider with the fast hashing
// embedder, and stream collection.
import { HashingEmbedder } from '../../../server/providers/local/hashing-embedder.js';
import { createLocalProvider } from '../../../server/providers/local/local-provider.js';
import type { CallContext, ChatMessage, ChatRequest, ChatStreamEvent } from '../../../server/providers/types.js';

export const ctx = (): CallContext => ({ signal: new AbortController().signal, timeouts: { connectMs: 1_000, firstTokenMs: 1_000, idleMs: 1_000 } });

export const provider = createLocalProvider({ embedder: new HashingEmbedder() });

export const request = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: 'local-chat', messages, ...extra });

export const ask = (text: string, extra: Partial<ChatRequest> = {}) => request([{ role: 'user', content: text }], extra);

export async function collect(events: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const all: ChatStreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}
