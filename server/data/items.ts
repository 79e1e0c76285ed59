// Items of the data engine: the file record (spec 2.1), the engine v2 item, single and
// multi-item patch, delete and lookups. Every operation is scoped to the caller's
// organization: an item is reachable only through a publisher that organization owns.
import { randomUUID } from 'node:crypto';
import { Prisma, type Item, type PrismaClient } from '../../generated/prisma/client.js';
import type { components } from '../../generated/types/openapi.js';
import { ApiError } from '../errors.js';
import type { OrganizationService } from '../identity/organizations.js';
import type { Principal } from '../identity/principal.js';
import { storableDate } from '../storage/timestamps.js';

type Schemas = components['schemas'];
export type FileDataView = Schemas['FileData'];
export type ItemView = Schemas['Item'];
export type ItemSummary = Schemas['PublisherItemSummary'];
export type ItemFilter = Schemas['ItemFilter'];
export type PatchItemInput = Schemas['PatchItemRequest'];
export type PatchOperation = Schemas['PatchOperation'];
export type PatchItemsResult = Schemas['PatchItemsResponse'];
export type DeleteItemsResult = Schemas['DeleteItemsResponse'];

type Transaction = Prisma.TransactionClient;

/**
 * What retrieval reads about an item besides its row. Called inside the transaction that
 * changed an item that has chunks; throwing rolls the change back (the single-item patch
 * then answers 502, spec 7.1).
 */
export interface RetrievalSync {
  itemChanged(tx: Transaction, item: Item): Promise<void>;
}

/**
 * The chunk store: chunks carry copies of what retrieval filters on (the publisher, i.e.
 * the tenant, and the item's visibility), so filtered vector and text search need no join.
 * Keeping the copies right is this sync's job; its failure is the spec's 502.
 */
export const chunkStoreSync: RetrievalSync = {
  async itemChanged(tx, item) {
    await tx.chunk.updateMany({
      where: { itemId: item.id },
      data: { publisherId: item.publisherId, visibleInSearch: item.visibleInSearch, visibleInChat: item.visibleInChat },
    });
  },
};

// ------------------------------------------------------------------- views

/** item_extra is JSON in storage and a string in the contract. */
function extraText(value: Prisma.JsonValue | null): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

type ItemWithOwners = Item & { publisher: { name: string; organization: { id: string; name: string } } };

export function viewFileData(item: ItemWithOwners): FileDataView {
  return {
    item_id: item.id,
    title: item.title,
    file_name: item.fileName,
    type: item.type,
    ingestion_source: item.ingestionSource,
    author: item.author,
    status: item.status,
    chunk_count: item.chunkCount,
    upload_date: iso(item.uploadDate),
    publisher_id: item.publisherId,
    publisher_name: item.publisher.name,
    organization_id: item.publisher.organization.id,
    organization_name: item.publisher.organization.name,
    item_subtitle: item.subtitle,
    item_image: item.itemImage,
    item_url: item.itemUrl,
    item_summary: item.itemSummary,
    item_tags: item.itemTags,
    isbn: item.isbn,
    publication_date: item.publicationDate,
    hosted_url: item.hostedUrl,
    visible_in_search: item.visibleInSearch,
    visible_in_chat: item.visibleInChat,
  };
}

export function viewItem(item: Item): ItemView {
  return {
    item_id: item.id,
    status: item.status as ItemView['status'],
    updated_at: item.updatedAt.toISOString(),
    etag: item.etag,
    item_title: item.title,
    item_subtitle: item.subtitle,
    filename: item.fileName,
    publication_date: item.publicationDate,
    type: item.type,
    item_image: item.itemImage,
    item_url: item.itemUrl,
    item_summary: item.itemSummary,
    item_number: item.itemNumber,
    item_extra: extraText(item.itemExtra),
    isbn: item.isbn,
    author: item.author,
    item_tags: item.itemTags,
    evergreen: item.evergreen,
    visible_in_search: item.visibleInSearch,
    visible_in_chat: item.visibleInChat,
  };
}

const summaryColumns = { id: true, title: true, fileName: true, status: true, producerId: true } as const;

function viewSummary(item: Pick<Item, 'id' | 'title' | 'fileName' | 'status' | 'producerId'>): ItemSummary {
  return { item_id: item.id, item_title: item.title, filename: item.fileName, status: item.status, producer_id: item.producerId };
}

// -------------------------------------------------------- patchable fields

type FieldKind = 'text' | 'list' | 'flag' | 'extra';
type FieldValue = string | string[] | boolean | null;

/** Contract field → column and kind. `list` fields take append/remove; null clears text and lists. */
const PATCHABLE = {
  item_title: { column: 'title', kind: 'text' },
  item_subtitle: { column: 'subtitle', kind: 'text' },
  publication_date: { column: 'publicationDate', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  item_image: { column: 'itemImage', kind: 'text' },
  item_url: { column: 'itemUrl', kind: 'text' },
  item_summary: { column: 'itemSummary', kind: 'text' },
  item_number: { column: 'itemNumber', kind: 'text' },
  item_extra: { column: 'itemExtra', kind: 'extra' },
  isbn: { column: 'isbn', kind: 'text' },
  author: { column: 'author', kind: 'list' },
  item_tags: { column: 'itemTags', kind: 'list' },
  evergreen: { column: 'evergreen', kind: 'flag' },
  visible_in_search: { column: 'visibleInSearch', kind: 'flag' },
  visible_in_chat: { column: 'visibleInChat', kind: 'flag' },
} as const satisfies Record<string, { column: keyof Item; kind: FieldKind }>;

type PatchableField = keyof typeof PATCHABLE;
type FieldValues = Partial<Record<PatchableField, FieldValue>>;
const FIELDS = Object.keys(PATCHABLE) as PatchableField[];

const isPatchable = (field: string): field is PatchableField => Object.hasOwn(PATCHABLE, field);

function currentValue(item: Item, field: PatchableField): FieldValue {
  const { column, kind } = PATCHABLE[field];
  return kind === 'extra' ? extraText(item.itemExtra) : (item[column] as FieldValue);
}

function sameValue(a: FieldValue, b: FieldValue): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => v === b[i]);
  return a === b;
}

/** The fields whose new value differs from the item's. */
function changedFields(item: Item, next: FieldValues): FieldValues {
  const changes: FieldValues = {};
  for (const field of FIELDS) {
    if (next[field] === undefined) continue;
    if (!sameValue(currentValue(item, field), next[field]!)) changes[field] = next[field];
  }
  return changes;
}

function columnsOf(changes: FieldValues): Prisma.ItemUpdateManyMutationInput {
  const data: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(changes) as [PatchableField, FieldValue][]) {
    const { column, kind } = PATCHABLE[field];
    data[column] = kind === 'extra' && value === null ? Prisma.DbNull : value;
  }
  return data as Prisma.ItemUpdateManyMutationInput;
}

function fitsKind(kind: FieldKind, value: unknown): value is FieldValue {
  switch (kind) {
    case 'text':
    case 'extra':
      return value === null || typeof value === 'string';
    case 'list':
      return value === null || (Array.isArray(value) && value.every((v) => typeof v === 'string'));
    case 'flag':
      return typeof value === 'boolean';
  }
}

/** A null list means an empty one: lists are never null in storage. */
const normalized = (field: PatchableField, value: FieldValue): FieldValue =>
  PATCHABLE[field].kind === 'list' && value === null ? [] : value;

interface CheckedOp {
  op: PatchOperation['op'];
  field: PatchableField;
  value: FieldValue;
}

function invalidOp(index: number, key: string, msg: string, input: unknown): ApiError {
  return new ApiError('VALIDATION_ERROR', `ops[${index}].${key}: ${msg}`, {
    issues: [{ loc: ['body', 'ops', String(index), key], msg, type: 'value_error', input }],
  });
}

/** Missing or empty ops is a 400 (spec 7.1); an op that cannot apply to its field is a 422. */
function checkOps(ops: PatchOperation[] | undefined): CheckedOp[] {
  if (!ops || ops.length === 0) {
    throw new ApiError('INVALID_REQUEST', 'ops is required: give at least one patch operation');
  }
  return ops.map(({ op, field, value }, index) => {
    if (!isPatchable(field)) throw invalidOp(index, 'field', `Not a patchable field; one of ${FIELDS.join(', ')}`, field);
    const { kind } = PATCHABLE[field];
    if (op === 'replace') {
      if (value === undefined || !fitsKind(kind, value)) throw invalidOp(index, 'value', `Not a valid value for ${field}`, value ?? null);
      return { op, field, value: normalized(field, value) };
    }
    if (kind !== 'list') throw invalidOp(index, 'op', `${op} applies to array fields (author, item_tags) only`, op);
    const values = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === 'string')) {
      throw invalidOp(index, 'value', `${op} takes a string or a non-empty array of strings`, value ?? null);
    }
    return { op, field, value: values };
  });
}

function applyOps(item: Item, ops: CheckedOp[]): FieldValues {
  const next: FieldValues = {};
  // Ops apply in order, each to what the previous ones left (lists are never null).
  const listOf = (field: PatchableField) => (next[field] ?? currentValue(item, field)) as string[];
  for (const { op, field, value } of ops) {
    if (op === 'replace') {
      next[field] = value;
    } else if (op === 'append') {
      const list = [...listOf(field)];
      for (const v of value as string[]) if (!list.includes(v)) list.push(v);
      next[field] = list;
    } else {
      next[field] = listOf(field).filter((v) => !(value as string[]).includes(v));
    }
  }
  return next;
}

type DateBound = 'created_after' | 'created_before' | 'updated_after' | 'updated_before';

/** A filter date: RFC 3339 allows instants (a leap second, year 0000) the database cannot compare with. */
function filterDate(filter: ItemFilter, bound: DateBound): Date | undefined {
  const text = filter[bound];
  if (text === undefined) return undefined;
  const date = storableDate(text);
  if (!date) {
    const msg = 'Not a storable instant: no leap second, year 0001 to 9999';
    throw new ApiError('VALIDATION_ERROR', `filter.${bound}: ${msg}`, {
      issues: [{ loc: ['body', 'filter', bound], msg, type: 'value_error', input: text }],
    });
  }
  return date;
}

/** `search` is a substring, not a pattern: LIKE's wildcards and its escape character match themselves. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, '\\$&');

/** Every field of ItemFilter (a field added to the contract fails the typecheck until it is listed). */
const FILTER_FIELDS: Record<keyof ItemFilter, true> = {
  item_ids: true,
  types: true,
  statuses: true,
  authors: true,
  tags: true,
  evergreen: true,
  visible_in_search: true,
  visible_in_chat: true,
  search: true,
  created_after: true,
  created_before: true,
  updated_after: true,
  updated_before: true,
};

/** The filter as applied: its declared fields only (the request schema is open; anything else was ignored). */
function appliedFilter(filter: ItemFilter): ItemFilter {
  return Object.fromEntries(Object.entries(filter).filter(([field]) => Object.hasOwn(FILTER_FIELDS, field))) as ItemFilter;
}

function filterWhere(filter: ItemFilter): Prisma.ItemWhereInput {
  const range = (after: DateBound, before: DateBound) => {
    const [gt, lt] = [filterDate(filter, after), filterDate(filter, before)];
    return gt || lt ? { ...(gt && { gt }), ...(lt && { lt }) } : undefined;
  };
  const where: Prisma.ItemWhereInput = {
    ...(filter.item_ids && { id: { in: filter.item_ids } }),
    ...(filter.types && { type: { in: filter.types } }),
    ...(filter.statuses && { status: { in: filter.statuses } }),
    ...(filter.authors && { author: { hasSome: filter.authors } }),
    ...(filter.tags && { itemTags: { hasSome: filter.tags } }),
    ...(filter.evergreen !== undefined && { evergreen: filter.evergreen }),
    ...(filter.visible_in_search !== undefined && { visibleInSearch: filter.visible_in_search }),
    ...(filter.visible_in_chat !== undefined && { visibleInChat: filter.visible_in_chat }),
    ...(filter.search && {
      OR: [
        { title: { contains: likeLiteral(filter.search), mode: 'insensitive' as const } },
        { fileName: { contains: likeLiteral(filter.search), mode: 'insensitive' as const } },
      ],
    }),
  };
  const created = range('created_after', 'created_before');
  const updated = range('updated_after', 'updated_before');
  if (created) where.createdAt = created;
  if (updated) where.updatedAt = updated;
  return where;
}

// ------------------------------------------------------------------ service

const VECTOR_STORE_FAILURE = 'Failed to update the vector store for this item';
/** Attempts of a compare-and-set write before a concurrent writer wins. */
const WRITE_ATTEMPTS = 3;

type WriteOutcome = { changed: boolean; item: Item };

/** The write that soft-deletes an item: it keeps its row but frees its unique keys (producer_id, content hash) for new uploads. */
export const softDeletion = () => ({ deletedAt: new Date(), producerId: null, contentHash: null, chunkCount: 0, etag: randomUUID(), updatedAt: new Date() });

export class ItemService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly organizations: OrganizationService,
    private readonly retrieval: RetrievalSync = chunkStoreSync,
  ) {}

  /** Spec 4.1: the caller's organization must own the item's publisher (403); missing or deleted is 404. */
  async getFile(principal: Principal, itemId: string): Promise<FileDataView> {
    return viewFileData(await this.ownedItem(principal, itemId));
  }

  async getItem(principal: Principal, itemId: string): Promise<ItemView> {
    return viewItem(await this.ownedItem(principal, itemId));
  }

  /** A live item with its publisher and organization, when the caller's organization owns it. */
  private async ownedItem(principal: Principal, itemId: string) {
    const item = await this.prisma.item.findFirst({
      where: { id: itemId, deletedAt: null },
      include: { publisher: { select: { name: true, organization: { select: { id: true, name: true } } } } },
    });
    if (!item) throw notFound(itemId);
    if (item.publisher.organization.id !== principal.organizationId) throw notYours();
    return item;
  }

  /** Fields present are set, null clears; `item_id` wins over `producer_id`. */
  async patchItem(principal: Principal, input: PatchItemInput): Promise<{ itemId: string; changed: boolean }> {
    if (!input.item_id && !input.producer_id) {
      throw new ApiError('INVALID_REQUEST', 'Give item_id or producer_id to identify the item');
    }
    const publisher = await this.organizations.publisherForCaller(principal, input.publisher_id);
    const item = input.item_id
      ? await this.prisma.item.findFirst({ where: { id: input.item_id, deletedAt: null } })
      : await this.prisma.item.findFirst({ where: { publisherId: publisher.id, producerId: input.producer_id, deletedAt: null } });
    if (!item) throw notFound(input.item_id ?? `with producer_id ${input.producer_id}`);
    if (item.publisherId !== publisher.id) {
      throw new ApiError('FORBIDDEN', `Item ${item.id} does not belong to publisher ${publisher.id}`);
    }
    const next: FieldValues = {};
    for (const field of FIELDS) {
      const value = (input as Record<string, unknown>)[field];
      if (value !== undefined) next[field] = normalized(field, value as FieldValue);
    }
    const outcome = await this.write(item, () => next);
    if (!outcome) throw notFound(item.id);
    return { itemId: item.id, changed: outcome.changed };
  }

  /** Applies `ops` to the publisher's items matching `filter`, at most `limit`, each on its own. */
  async patchItems(
    principal: Principal,
    publisherId: string,
    request: { filter?: ItemFilter; ops?: PatchOperation[]; limit?: number },
  ): Promise<PatchItemsResult> {
    const ops = checkOps(request.ops);
    const publisher = await this.organizations.publisherForCaller(principal, publisherId);
    const filter = request.filter ?? {};
    const limit = request.limit ?? 100;
    const matched = await this.prisma.item.findMany({
      where: { ...filterWhere(filter), publisherId: publisher.id, deletedAt: null },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      take: limit + 1,
    });
    const more = matched.length > limit;
    const items = matched.slice(0, limit);
    const withChunks = await this.itemsWithChunks(items.map((i) => i.id));

    const results: PatchItemsResult['results'] = [];
    for (const item of items) {
      try {
        const outcome = await this.write(item, (current) => applyOps(current, ops), withChunks.has(item.id));
        results.push(
          outcome
            ? { item_id: item.id, success: true, error: null, etag: outcome.item.etag, updated_at: outcome.item.updatedAt.toISOString() }
            : { item_id: item.id, success: false, error: 'Item not found (deleted meanwhile)', etag: null, updated_at: null },
        );
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 502) throw error;
        results.push({ item_id: item.id, success: false, error: error.message, etag: null, updated_at: null });
      }
    }
    const patched = results.filter((r) => r.success).length;
    const failed = results.length - patched;
    return {
      success: failed === 0,
      total_matched: results.length,
      total_patched: patched,
      total_failed: failed,
      results,
      message:
        `${patched} of ${results.length} matched items patched.` +
        (more ? ` More items match: the limit of ${limit} was reached.` : ''),
      filter_applied: appliedFilter(filter),
    };
  }

  /**
   * Soft delete: the row stays (deletedAt) but loses producer_id and content_hash so the
   * same content can be uploaded again; its chunks leave retrieval. An id that is not the
   * caller's is reported exactly like one that does not exist.
   */
  async deleteItems(principal: Principal, itemIds: string[] | undefined): Promise<DeleteItemsResult> {
    if (!itemIds || itemIds.length === 0) {
      throw new ApiError('INVALID_REQUEST', 'item_ids is required: give at least one item id');
    }
    const requested = [...new Set(itemIds)];
    const live = await this.prisma.item.findMany({
      where: { id: { in: requested }, deletedAt: null },
      select: { id: true, publisher: { select: { organizationId: true } } },
    });
    // Spec 7.1: an unauthorized delete is a 403, and then nothing of the batch is deleted.
    const foreign = live.filter((i) => i.publisher.organizationId !== principal.organizationId).map((i) => i.id);
    if (foreign.length > 0) {
      throw new ApiError('FORBIDDEN', `Not authorized to delete item(s): ${foreign.join(', ')}`);
    }
    const ownedIds = live.map((i) => i.id);
    if (ownedIds.length > 0) {
      await this.prisma.$transaction(async (tx) => {
        await tx.chunk.deleteMany({ where: { itemId: { in: ownedIds } } });
        await tx.item.updateMany({
          where: { id: { in: ownedIds }, deletedAt: null },
          data: softDeletion(),
        });
      });
    }
    const deleted = new Set(ownedIds);
    const results = requested.map((id) =>
      deleted.has(id)
        ? { item_id: id, success: true, error: null, deleted_from: { database: true, vector_store: true } }
        : { item_id: id, success: false, error: 'Item not found', deleted_from: { database: false, vector_store: false } },
    );
    const failed = requested.length - deleted.size;
    return {
      success: failed === 0,
      mode: 'soft',
      total_requested: requested.length,
      total_deleted: deleted.size,
      total_failed: failed,
      results,
      message: `${deleted.size} of ${requested.length} items deleted.`,
    };
  }

  async itemsByProducer(principal: Principal, publisherId: string, producerIds: string[] | undefined): Promise<ItemSummary[]> {
    if (!producerIds || producerIds.length === 0) {
      throw new ApiError('INVALID_REQUEST', 'producer_ids is required: give at least one producer id');
    }
    const publisher = await this.organizations.publisherForCaller(principal, publisherId);
    const rows = await this.prisma.item.findMany({
      where: { publisherId: publisher.id, producerId: { in: [...new Set(producerIds)] }, deletedAt: null },
      select: summaryColumns,
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
    return rows.map(viewSummary);
  }

  async listPublisherItems(principal: Principal, publisherId: string): Promise<ItemSummary[]> {
    const publisher = await this.organizations.publisherForCaller(principal, publisherId);
    const rows = await this.prisma.item.findMany({
      where: { publisherId: publisher.id, deletedAt: null },
      select: summaryColumns,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    });
    return rows.map(viewSummary);
  }

  private async itemsWithChunks(itemIds: string[]): Promise<Set<string>> {
    if (itemIds.length === 0) return new Set();
    const rows = await this.prisma.chunk.findMany({ where: { itemId: { in: itemIds } }, select: { itemId: true }, distinct: ['itemId'] });
    return new Set(rows.map((r) => r.itemId));
  }

  /**
   * Writes what `next` derives from the item as a compare-and-set on its etag (a concurrent
   * writer makes it re-read and recompute), with a new etag and updated_at. An item with
   * chunks has retrieval updated in the same transaction; its failure is a 502 and rolls
   * the write back. null when the item was deleted meanwhile.
   */
  private async write(item: Item, next: (current: Item) => FieldValues, hasChunks?: boolean): Promise<WriteOutcome | null> {
    let current: Item | null = item;
    for (let attempt = 1; current; attempt++) {
      const changes = changedFields(current, next(current));
      if (Object.keys(changes).length === 0) return { changed: false, item: current };
      const base: Item = current;
      const data = { ...columnsOf(changes), etag: randomUUID(), updatedAt: new Date() };
      const written = await this.prisma.$transaction(async (tx) => {
        const { count } = await tx.item.updateMany({ where: { id: base.id, etag: base.etag, deletedAt: null }, data });
        if (count === 0) return null;
        const updated = await tx.item.findUniqueOrThrow({ where: { id: base.id } });
        const indexed = hasChunks ?? (await tx.chunk.count({ where: { itemId: base.id } })) > 0;
        if (indexed) {
          try {
            await this.retrieval.itemChanged(tx, updated);
          } catch (cause) {
            throw new ApiError('SERVICE_UNAVAILABLE', VECTOR_STORE_FAILURE, { status: 502, cause });
          }
        }
        return updated;
      });
      if (written) return { changed: true, item: written };
      if (attempt >= WRITE_ATTEMPTS) {
        throw new ApiError('INTERNAL_ERROR', `Item ${base.id} kept changing concurrently; retry the patch`);
      }
      current = await this.prisma.item.findFirst({ where: { id: base.id, deletedAt: null } });
    }
    return null;
  }
}

function notFound(what: string): ApiError {
  return new ApiError('NOT_FOUND', `Item ${what} not found`);
}

function notYours(): ApiError {
  return new ApiError('FORBIDDEN', 'Not authorized to access this item');
}
