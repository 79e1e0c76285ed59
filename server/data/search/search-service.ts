// Search and recommendations over collections: the request rules of spec part 7 and the
// answer shapes of the public platform (real-platform.md), over the hybrid retriever.
import type { PrismaClient } from '../../../generated/prisma/client.js';
import type { components } from '../../../generated/types/openapi.js';
import { PUBLISHERS_HINT } from '../../identity/organizations.js';
import { ApiError } from '../../errors.js';
import type { CallScope } from '../../gateway/gateway-service.js';
import type { Principal } from '../../identity/principal.js';
import { publishersNamed } from '../publishers.js';
import type { Passage, Retriever } from './chunk-index.js';
import type { Collections } from './collections.js';

type Schemas = components['schemas'];
export type SearchRequest = Schemas['SearchRequest'];
export type SearchResponse = Schemas['SearchResponse'];
export type RecommendationsRequest = Schemas['RecommendationsRequest'];
export type AffiliateItemsRequest = Schemas['AffiliateItemsRequest'];
export type RecommendedItem = Schemas['RecommendedItem'];

/** Weaviate's default certainty, and the public platform's. */
export const DEFAULT_CERTAINTY = 0.75;
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
const DEFAULT_SNIPPETS_OVERALL = 100;
const DEFAULT_ITEM_COUNT = 10;

/** Spec 7.1: an invalid search body is a 403 with the gateway's `forbidden` code. */
function invalidBody(message: string): ApiError {
  return new ApiError('FORBIDDEN', `Invalid request: ${message}`, { gatewayCode: 'forbidden' });
}

function notYours(publisher: string): ApiError {
  return new ApiError('FORBIDDEN', `Publisher "${publisher}" is not in your organization (${PUBLISHERS_HINT})`, { gatewayCode: 'forbidden' });
}

const isBlank = (text: string | undefined) => text === undefined || text.trim() === '';

export class SearchService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly collections: Collections,
    private readonly retriever: Retriever,
  ) {}

  async search(principal: Principal, body: SearchRequest, call: CallScope): Promise<SearchResponse> {
    if (isBlank(body.query)) throw invalidBody('query must not be empty');
    if (isBlank(body.collection)) throw invalidBody('collection must not be empty');
    const limit = body.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw invalidBody(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    const { collection, publisherIds } = await this.scope(principal, body.collection, body.tenant);
    const passages = await this.retriever.retrieve(
      { organizationId: principal.organizationId, publisherIds, query: body.query, limit, certainty: body.certainty ?? DEFAULT_CERTAINTY, purpose: 'search' },
      call,
    );
    return {
      data: passages.map((p) => ({
        uuid: p.chunkId,
        metadata: { distance: p.distance, certainty: p.certainty, score: p.score },
        properties: {
          item_id: p.itemId,
          item_title: p.itemTitle,
          publisher: p.publisherName,
          publication_date: p.item.publicationDate,
          snippet: p.content,
          type: p.item.type,
          author: p.item.authors,
        },
        collection,
      })),
      intent: null,
    };
  }

  async recommend(principal: Principal, body: RecommendationsRequest, options: { verbose: boolean }, call: CallScope): Promise<RecommendedItem[]> {
    if (isBlank(body.query)) throw invalidBody('query must not be empty');
    if (isBlank(body.collection)) throw invalidBody('collection must not be empty');
    const { publisherIds } = await this.scope(principal, body.collection, body.tenant);
    const allowed = await this.narrow(principal, publisherIds, body.publishers);
    return this.rank(principal, allowed, body, options.verbose, call);
  }

  /** Affiliated publishers: all publishers of the caller's organization (see openapi.yaml). */
  async affiliates(principal: Principal, body: AffiliateItemsRequest, call: CallScope): Promise<RecommendedItem[]> {
    if (isBlank(body.query)) throw invalidBody('query must not be empty');
    const all = await this.organizationPublishers(principal.organizationId);
    const allowed = await this.narrow(principal, all, body.publishers);
    return this.rank(principal, allowed, body, false, call);
  }

  /** The collection's name and the publishers a request may read, by the tenant rules of part 7. */
  private async scope(principal: Principal, name: string, tenant: string | undefined): Promise<{ collection: string; publisherIds: string[] }> {
    const collection = await this.collections.find(principal.organizationId, name);
    if (!collection) throw new ApiError('INVALID_REQUEST', `Invalid collection: "${name}" is not a collection of your organization.`);
    if (!collection.multiTenant) {
      if (tenant !== undefined) throw new ApiError('INVALID_REQUEST', `Invalid tenant: collection "${name}" is not multi-tenant.`);
      return { collection: collection.name, publisherIds: await this.organizationPublishers(principal.organizationId) };
    }
    if (isBlank(tenant)) throw new ApiError('INVALID_REQUEST', `Missing tenant: collection "${name}" is multi-tenant; name a publisher as tenant (${PUBLISHERS_HINT}).`);
    // The collection is the caller's: its tenants are the caller's publishers. Another
    // organization's publisher is answered as one that does not exist (its existence is not
    // the caller's to learn).
    const publisher = await this.prisma.publisher.findFirst({ where: { name: tenant, organizationId: principal.organizationId }, select: { id: true } });
    if (!publisher) throw new ApiError('INVALID_REQUEST', `Invalid tenant: "${tenant}" is not a tenant of collection "${name}" (${PUBLISHERS_HINT}).`);
    return { collection: collection.name, publisherIds: [publisher.id] };
  }

  private async organizationPublishers(organizationId: string): Promise<string[]> {
    return (await this.prisma.publisher.findMany({ where: { organizationId }, select: { id: true } })).map((p) => p.id);
  }

  /** `publishers` (names) narrows the set; a name that is not the caller's publisher is a 400 (another organization's: 403). */
  private async narrow(principal: Principal, publisherIds: string[], names: string[] | undefined): Promise<string[]> {
    if (!names || names.length === 0) return publisherIds;
    const wanted = new Set((await publishersNamed(this.prisma, principal, names, notYours)).map((p) => p.id));
    return publisherIds.filter((id) => wanted.has(id));
  }

  /** Passages grouped by item, ranked by matching snippet count, then cumulative certainty. */
  private async rank(
    principal: Principal,
    publisherIds: string[],
    body: AffiliateItemsRequest,
    verbose: boolean,
    call: CallScope,
  ): Promise<RecommendedItem[]> {
    const passages = await this.retriever.retrieve(
      {
        organizationId: principal.organizationId,
        publisherIds,
        query: body.query,
        limit: body.max_snippet_count_overall ?? DEFAULT_SNIPPETS_OVERALL,
        certainty: body.certainty_threshold ?? DEFAULT_CERTAINTY,
        purpose: 'search',
        ...(body.media_types && { itemTypes: body.media_types }),
      },
      call,
    );
    const byItem = new Map<string, Passage[]>();
    for (const p of passages) byItem.set(p.itemId, [...(byItem.get(p.itemId) ?? []), p]);
    const minimum = body.min_snippet_count_per_item ?? 1;
    return [...byItem.values()]
      .filter((group) => group.length >= minimum)
      .map((group) => recommendedItem(group, verbose))
      .sort((a, b) => b.snippet_count - a.snippet_count || b.cumulative_certainty - a.cumulative_certainty)
      .slice(0, body.item_count ?? DEFAULT_ITEM_COUNT);
  }
}

function recommendedItem(group: Passage[], verbose: boolean): RecommendedItem {
  const [first] = group as [Passage, ...Passage[]];
  return {
    item_id: first.itemId,
    item_title: first.itemTitle,
    item_subtitle: first.item.subtitle,
    author: first.item.authors,
    type: first.item.type,
    publication_date: first.item.publicationDate,
    item_url: first.item.url,
    item_image: first.item.image,
    item_summary: first.item.summary,
    publisher: first.publisherName,
    snippet_count: group.length,
    cumulative_certainty: group.reduce((sum, p) => sum + p.certainty, 0),
    uuids: group
      .toSorted((a, b) => b.certainty - a.certainty)
      .map((p) => ({ uuid: p.chunkId, item_summary: p.item.summary, part: p.ordinal, certainty: p.certainty, ...(verbose && { snippet: p.content }) })),
  };
}
