// Grounding sources: the passages retrieval finds in chat-visible content, in the contract's
// `Citation` shape (with the item's public URL), best first.
import type { components } from '../../../generated/types/openapi.js';
import type { PrismaClient, Publisher } from '../../../generated/prisma/client.js';
import { PUBLISHERS_HINT } from '../../identity/organizations.js';
import { ApiError } from '../../errors.js';
import type { CallScope } from '../../gateway/gateway-service.js';
import type { Principal } from '../../identity/principal.js';
import { publishersNamed } from '../publishers.js';
import type { Retriever } from '../search/chunk-index.js';

export type Source = components['schemas']['Citation'];

export interface SourceQuery {
  organizationId: string;
  publisherIds: string[];
  query: string;
  /** Earlier turns of the conversation, oldest first (conversation.ts). */
  context?: string[];
  limit: number;
  certainty: number;
}

export class Sources {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly retriever: Retriever,
  ) {}

  /**
   * A publisher named for grounding: one that does not exist is 400 PUBLISHER_NOT_FOUND
   * (never 404, spec 7.3); one of another organization is 403, as for every data operation.
   */
  async publisherNamed(principal: Principal, name: string): Promise<Publisher> {
    return (await this.publishersNamed(principal, [name]))[0]!;
  }

  /** Several publishers named for grounding, by the rules of `publisherNamed`, in one query. */
  publishersNamed(principal: Principal, names: readonly string[]): Promise<Publisher[]> {
    return publishersNamed(this.prisma, principal, names, (name) => new ApiError('FORBIDDEN', `Publisher "${name}" is not in your organization (${PUBLISHERS_HINT}).`));
  }

  async find(query: SourceQuery, scope: CallScope): Promise<Source[]> {
    const passages = await this.retriever.retrieve({ ...query, purpose: 'chat' }, scope);
    if (passages.length === 0) return [];
    const items = await this.prisma.item.findMany({
      where: { id: { in: [...new Set(passages.map((p) => p.itemId))] } },
      select: { id: true, itemUrl: true, hostedUrl: true },
    });
    const urls = new Map(items.map((item) => [item.id, item.itemUrl ?? item.hostedUrl ?? null]));
    return passages.map((p) => ({
      item_id: p.itemId,
      title: p.itemTitle,
      publisher: p.publisherName,
      url: urls.get(p.itemId) ?? null,
      snippet: p.content,
      certainty: Math.min(1, Math.max(0, p.certainty)),
    }));
  }
}
