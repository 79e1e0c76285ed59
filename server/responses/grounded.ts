// Grounded responses: passages of a publisher's chat-visible content, retrieved for the
// request's last user message (read with the exchange before it), go before the conversation (the same prompt as grounded
// chat completions, numbered so `[n]` cites `citations[n-1]`); the answer (JSON, or a
// stream's terminal event) reports `sources_returned`, the `citations`, and one
// `file_citation` annotation per source.
import { conversationContext, lastUserText } from '../data/grounding/conversation.js';
import { GROUNDING_DEFAULTS } from '../data/grounding/grounded-completions.js';
import { groundingMessage } from '../data/grounding/prompt.js';
import type { CallScope } from '../gateway/gateway-service.js';
import type { Source, Sources } from '../data/grounding/sources.js';
import type { Principal } from '../identity/principal.js';
import type { ChatMessage } from '../providers/types.js';
import { inputItems, toMessages } from './input.js';
import type { GroundedResponseBody } from './types.js';

/** The passages' system message, the annotations of the answer, and what the answer reports about its sources. */
export interface Grounding {
  message: ChatMessage;
  annotations(text: string): Record<string, unknown>[];
  report: { sources_returned: boolean; citations: Source[] };
}

export async function groundResponse(sources: Sources, principal: Principal, body: GroundedResponseBody, scope: CallScope): Promise<Grounding> {
  const publisher = await sources.publisherNamed(principal, body.rag_publisher);
  const conversation = toMessages(inputItems(body.input));
  const question = lastUserText(conversation);
  // Without a user message there is nothing to retrieve for; the response says why (400).
  const citations = question
    ? await sources.find(
        {
          organizationId: principal.organizationId,
          publisherIds: [publisher.id],
          query: question,
          context: conversationContext(conversation),
          limit: body.sources_limit ?? GROUNDING_DEFAULTS.sources_limit,
          certainty: body.certainty_threshold ?? GROUNDING_DEFAULTS.certainty,
        },
        scope,
      )
    : [];
  return {
    message: groundingMessage(citations, { publisher: publisher.name, cite: true }),
    annotations: (text) =>
      citations.map((source, n) => {
        const marker = text.indexOf(`[${n + 1}]`);
        return { type: 'file_citation', file_id: source.item_id, filename: source.title ?? source.item_id, index: marker >= 0 ? marker : text.length };
      }),
    report: { sources_returned: citations.length > 0, citations },
  };
}
