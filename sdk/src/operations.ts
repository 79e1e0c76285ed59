// Types of the client surface, derived from the generated client so that a new or changed
// operation in openapi.yaml flows through `npm run generate` without hand-written types.
import type { PlatformApi } from '../../generated/client/sdk.gen.js';
import type { OperationId } from '../../generated/contract/routes.js';
import type { PaginatedOperation } from '../../generated/sdk/methods.js';
import type { APIPromise, PageItem, PagePromise } from './core/api-promise.js';
import type { ChatCompletionStream, ResponseStream } from './core/streaming.js';
import type { Fetch, RetryEvent } from './core/transport.js';

export type { OperationId };

/** Every operation of the contract (one method of `Platform` each). */
export type Operation = OperationId & keyof PlatformApi;

type GeneratedOptions<K extends Operation> = NonNullable<Parameters<PlatformApi[K]>[0]>;

/** `{ body, path, query }` of an operation, exactly as the contract defines them. */
export type ParamsOf<K extends Operation> = Pick<GeneratedOptions<K>, Extract<keyof GeneratedOptions<K>, 'body' | 'path' | 'query'>>;

type Fields<K extends Operation> = Awaited<ReturnType<PlatformApi[K]>>;
/** The success body of an operation. */
export type DataOf<K extends Operation> = Fields<K> extends infer F ? (F extends { error: undefined; data: infer D } ? D : never) : never;

/** The request body of an operation. */
export type BodyOf<K extends Operation> = ParamsOf<K> extends { body?: infer B } ? NonNullable<B> : never;
/** The path parameters of an operation. */
export type PathOf<K extends Operation> = ParamsOf<K> extends { path?: infer P } ? NonNullable<P> : never;
/** The query parameters of an operation. */
export type QueryOf<K extends Operation> = ParamsOf<K> extends { query?: infer Q } ? NonNullable<Q> : never;
type CanStream<K extends Operation> = 'stream' extends keyof BodyOf<K> ? true : false;

/** The stream an operation answers with when called with `body.stream: true`. */
export type StreamOf<K extends Operation> =
  CanStream<K> extends true
    ? DataOf<K> extends { object: 'chat.completion' }
      ? ChatCompletionStream
      : DataOf<K> extends { object: 'response' }
        ? ResponseStream
        : never
    : never;

/** Per-request overrides of the client's options. */
export interface RequestOptions {
  /** Milliseconds per attempt (for a stream: until the response headers, then for each wait on the server for the next chunk; the time your code holds a chunk is not counted). */
  timeout?: number;
  /** Retries after the first attempt (default 4, streams 2). */
  maxRetries?: number;
  /** Aborts the request (and its retries and backoff waits). */
  signal?: AbortSignal;
  /** Extra headers; `null` removes a default header. */
  headers?: Record<string, string | null | undefined>;
  /** Idempotency key of a POST (default: a fresh key per call, reused by its retries; a streaming request is still never resent after it may have reached the server). */
  idempotencyKey?: string;
  /** fetch implementation for this request. */
  fetch?: Fetch;
  /** Base URL for this request (overrides the API / management base URL). */
  baseUrl?: string;
  /** Called before each retry. */
  onRetry?: (event: RetryEvent) => void;
}

export type RequestArgs<K extends Operation> = {} extends ParamsOf<K>
  ? [params?: ParamsOf<K>, options?: RequestOptions]
  : [params: ParamsOf<K>, options?: RequestOptions];

/** What a non-streaming call returns: a page promise for cursor-paginated lists only. */
export type ResultOf<K extends Operation> = K extends PaginatedOperation ? PagePromise<DataOf<K>, PageItem<DataOf<K>>> : APIPromise<DataOf<K>>;

/** A stream-capable operation: `stream: true` gives a stream, otherwise the JSON body. */
export interface StreamingMethod<K extends Operation> {
  (params: Omit<ParamsOf<K>, 'body'> & { body: BodyOf<K> & { stream: true } }, options?: RequestOptions): APIPromise<StreamOf<K>>;
  (params: Omit<ParamsOf<K>, 'body'> & { body: BodyOf<K> & { stream?: false | null } }, options?: RequestOptions): APIPromise<DataOf<K>>;
  (params: ParamsOf<K>, options?: RequestOptions): APIPromise<DataOf<K> | StreamOf<K>>;
}

export type OperationMethod<K extends Operation> = [StreamOf<K>] extends [never]
  ? (...args: RequestArgs<K>) => ResultOf<K>
  : StreamingMethod<K>;

/** The namespaces and the flat operationId methods, with the operations' docs (generated). */
export type { PlatformOperations, PlatformResources } from '../../generated/sdk/resources.js';
