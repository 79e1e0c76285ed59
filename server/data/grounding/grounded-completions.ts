// Grounded chat completions: the v2 (guarded) completion, with passages of a publisher's
// chat-visible content retrieved for the last user message (read with the exchange before it,
// conversation.ts) and put before the conversation
// (prompt.ts). The model call is the ordinary guarded one (routing, guardrails, tradition,
// failover, metering unchanged); the answer adds `sources_returned` and, when asked,
// `citations`, numbered as the prompt numbered them, so an answer's `[n]` is `citations[n-1]`.
import type { components } from '../../../generated/types/openapi.js';
import type { ChatCompletionBody, ChatCompletions, CompletionContext } from '../../gateway/chat-completions.js';
import type { Principal } from '../../identity/principal.js';
import type { ChatMessage } from '../../providers/types.js';
import { conversationContext, lastUserText } from './conversation.js';
import { groundingMessage } from './prompt.js';
import type { Source, Sources } from './sources.js';

type Schemas = components['schemas'];
export type GroundedBody = Schemas['GroundedChatCompletionRequest'];
type StreamEvent = Schemas['ChatCompletionStreamEvent'];

/** `headers`: the route the answer took. */
export type GroundedAnswer =
  | { kind: 'json'; body: Schemas['GroundedChatCompletion']; headers: Record<string, string> }
  | { kind: 'stream'; stream: AsyncIterable<StreamEvent>; headers: Record<string, string> };

/** The contract's defaults (the validator checks the values but does not fill them in). */
export const GROUNDING_DEFAULTS = { sources_limit: 3, certainty: 0.75 } as const;

export class GroundedCompletions {
  constructor(
    private readonly sources: Sources,
    private readonly completions: ChatCompletions,
  ) {}

  async create(principal: Principal, body: GroundedBody, ctx: CompletionContext): Promise<GroundedAnswer> {
    const { rag_publisher, sources_limit, certainty, include_citations, ...completion } = body;
    const publisher = await this.sources.publisherNamed(principal, rag_publisher);
    // Everything the completion would refuse is refused before retrieval: a blocked or
    // misrouted request embeds nothing (and is metered for nothing).
    await this.completions.precheck(completion as ChatCompletionBody, ctx);
    const messages = completion.messages as ChatMessage[];
    const question = lastUserText(messages);
    const sources = question
      ? await this.sources.find(
          {
            organizationId: principal.organizationId,
            publisherIds: [publisher.id],
            query: question,
            context: conversationContext(messages),
            limit: sources_limit ?? GROUNDING_DEFAULTS.sources_limit,
            certainty: certainty ?? GROUNDING_DEFAULTS.certainty,
          },
          ctx,
        )
      : [];
    const cite = include_citations === true;
    const grounded: ChatCompletionBody = {
      ...(completion as ChatCompletionBody),
      messages: [groundingMessage(sources, { publisher: publisher.name, cite }), ...completion.messages] as ChatCompletionBody['messages'],
    };
    // The passages are the publisher's own content, not the caller's input: the input checks stand.
    const answer = await this.completions.create(grounded, ctx, { inputChecked: true });
    const sourcesReturned = sources.length > 0;
    if (answer.kind === 'json') {
      return { kind: 'json', body: { ...answer.body, sources_returned: sourcesReturned, ...(cite ? { citations: sources } : {}) }, headers: answer.headers };
    }
    return { kind: 'stream', stream: withCitations(answer.stream, sourcesReturned, cite ? sources : []), headers: answer.headers };
  }
}


/**
 * The completion's chunks, preceded by the `citations` event when there are citations to
 * send (same id and model as the chunks, empty `choices`); the first chunk also reports
 * `sources_returned`.
 */
async function* withCitations(
  chunks: AsyncIterable<Schemas['ChatCompletionChunk']>,
  sourcesReturned: boolean,
  citations: Source[],
): AsyncGenerator<StreamEvent> {
  let first = true;
  for await (const chunk of chunks) {
    if (first) {
      first = false;
      if (citations.length > 0) {
        yield { id: chunk.id, object: 'chat.completion.chunk', created: chunk.created, model: chunk.model, choices: [], citations, sources_returned: true };
      }
      yield { ...chunk, sources_returned: sourcesReturned };
      continue;
    }
    yield chunk;
  }
}
