// The value every operation returns: a Promise of the parsed data that can also give the
// raw response (`withResponse()`); for cursor-paginated lists, also an async iterable of
// every item across pages.
import { parseRateLimit, routeOf, traceIdOf, type RateLimitInfo, type RouteAttempt } from './headers.js';

export interface WithResponse<T> {
  data: T;
  response: Response;
  /** `X-Trace-Id` of the answer. */
  traceId: string | undefined;
  /** `X-RateLimit-*` of the answer, when sent. */
  rateLimit: RateLimitInfo | undefined;
  /** Inference answers: every upstream attempt the gateway made (`X-Gateway-Route`): who answered, after what. */
  route: RouteAttempt[] | undefined;
}

/**
 * `response` is made on first use: most calls only want the data, and a copy of the
 * response with its body unread costs more than the rest of the SDK's work on a call.
 */
export function withResponse<T>(data: T, headers: Headers, response: () => Response): WithResponse<T> {
  let made: Response | undefined;
  return {
    data,
    get response() {
      return (made ??= response());
    },
    get traceId() {
      return traceIdOf(headers);
    },
    get rateLimit() {
      return parseRateLimit(headers);
    },
    get route() {
      return routeOf(headers);
    },
  };
}

export class APIPromise<T> extends Promise<T> {
  readonly #result: Promise<WithResponse<T>>;
  #data: Promise<T> | undefined;

  constructor(result: Promise<WithResponse<T>>) {
    super((resolve) => resolve(undefined as T));
    this.#result = result;
  }

  // `then` on the base class must build plain promises, never another APIPromise.
  static override get [Symbol.species]() {
    return Promise;
  }

  /**
   * The data with the HTTP `Response`, its trace id and rate-limit headers. The response's
   * body is left unread for you (`response.bodyUsed` is false), except for a stream, whose
   * body is the stream itself.
   */
  withResponse(): Promise<WithResponse<T>> {
    return this.#result;
  }

  /** The raw HTTP `Response`, body unread (an error status still rejects with the typed error). */
  asResponse(): Promise<Response> {
    return this.#result.then((r) => r.response);
  }

  #parsed(): Promise<T> {
    this.#data ??= this.#result.then((r) => r.data);
    return this.#data;
  }

  override then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#parsed().then(onfulfilled, onrejected);
  }

  override catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<T | R> {
    return this.#parsed().catch(onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<T> {
    return this.#parsed().finally(onfinally);
  }
}

/** A management list page: `{data: [...], meta: {hasMore, nextCursor}}`. */
export interface CursorPage<Item> {
  data: Item[];
  meta: { hasMore?: boolean; nextCursor?: string | null };
}

/** The item type of a cursor-paginated page, `never` for anything else. */
export type PageItem<D> = D extends { data: Array<infer Item>; meta: { nextCursor?: string | null } } ? Item : never;

function nextCursor(page: unknown): string | undefined {
  const meta = (page as { meta?: { hasMore?: unknown; nextCursor?: unknown } } | null)?.meta;
  if (!meta || meta.hasMore === false) return undefined;
  return typeof meta.nextCursor === 'string' && meta.nextCursor !== '' ? meta.nextCursor : undefined;
}

const isEmptyPage = (page: unknown): boolean => {
  const items = (page as { data?: unknown } | null)?.data;
  return Array.isArray(items) && items.length === 0;
};

/**
 * The first page, awaitable; `for await` walks every item of every page via `nextCursor`.
 * The walk ends on a page without a next cursor (or with `hasMore: false`), on an empty
 * page, and on a cursor already followed (a server repeating its cursor would loop forever).
 */
export class PagePromise<Page, Item = PageItem<Page>> extends APIPromise<Page> implements AsyncIterable<Item> {
  readonly #fetchPage: (cursor: string) => Promise<WithResponse<Page>>;
  readonly #startCursor: string | undefined;

  /** `startCursor`: the cursor the first page was fetched with, if any. */
  constructor(first: Promise<WithResponse<Page>>, fetchPage: (cursor: string) => Promise<WithResponse<Page>>, startCursor?: string) {
    super(first);
    this.#fetchPage = fetchPage;
    this.#startCursor = startCursor;
  }

  /** Every page, starting with this one. */
  async *pages(): AsyncGenerator<Page> {
    const followed = new Set<string>();
    if (this.#startCursor !== undefined) followed.add(this.#startCursor);
    let page = (await this.withResponse()).data;
    yield page;
    for (;;) {
      const cursor = nextCursor(page);
      if (cursor === undefined || followed.has(cursor) || isEmptyPage(page)) return;
      followed.add(cursor);
      page = (await this.#fetchPage(cursor)).data;
      yield page;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item> {
    for await (const page of this.pages()) {
      const items = (page as { data?: unknown }).data;
      if (Array.isArray(items)) yield* items as Item[];
    }
  }
}
