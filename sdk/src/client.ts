// The client surface: one `Platform` object per configuration, with a method per
// operationId of the contract. core/request.ts builds each call's request with the
// generated client's serializers; the transport (core/transport.ts) sends, retries and
// types the errors.
import { clientRoutesById as routesById, type ClientRoute } from '../../generated/contract/client-routes.js';
import { paginatedOperations, resourceMethods } from '../../generated/sdk/methods.js';
import { APIPromise, PagePromise, withResponse, type WithResponse } from './core/api-promise.js';
import { TokenCache, type AccessToken, type ClientCredentials } from './core/auth.js';
import { parseBody, unreadCopy } from './core/body.js';
import { isObject, PlatformError } from './core/errors.js';
import { newIdempotencyKey } from './core/idempotency.js';
import { buildRequest, mergeHeaders, type Params } from './core/request.js';
import { DEFAULT_MAX_RETRIES, DEFAULT_RETRY_POLICY, DEFAULT_STREAM_MAX_RETRIES, type RetryPolicy } from './core/retry.js';
import { ChatCompletionStream, ResponseStream } from './core/streaming.js';
import { rawStreamResponse, send, type Fetch, type RetryEvent } from './core/transport.js';
import type { Operation, PlatformOperations, PlatformResources, RequestArgs, RequestOptions } from './operations.js';
import { VERSION } from './version.js';

export interface PlatformOptions {
  /**
   * API key (`sk_...`). Default: the `PLATFORM_API_KEY` environment variable; required
   * unless `clientCredentials` is given. `null` sends no credential at all (e.g. behind a
   * proxy that adds it).
   */
  apiKey?: string | null | undefined;
  /**
   * @deprecated OAuth 2.0 client credentials are sunset by December 2026: use an API key.
   * The access token is fetched from `/oauth2/token`, cached and refreshed before it expires.
   */
  clientCredentials?: ClientCredentials | undefined;
  /**
   * Inference and data API, e.g. `https://api.example.com` (absolute http(s), no query or
   * fragment; checked at construction). Default: the `PLATFORM_BASE_URL` environment variable; required.
   */
  baseUrl?: string | undefined;
  /**
   * Platform-management API (`/api/v1/...`: health, metrics, agents, keys). Default: the
   * `PLATFORM_MANAGEMENT_BASE_URL` environment variable. Checked at construction when set;
   * optional, since only management calls need it: without it they reject at once (no
   * request sent) with an error naming the option and the variable.
   */
  managementBaseUrl?: string | undefined;
  /** Milliseconds per attempt (for a stream: until the response headers, then for each wait on the server for the next chunk; the time your code holds a chunk is not counted). Default 120 000. */
  timeout?: number | undefined;
  /** Retries after the first attempt of a non-streaming request. Default 4 (5 attempts). */
  maxRetries?: number | undefined;
  /** Retries of a streaming request before its first event. Default 2 (3 attempts), and never more than `maxRetries`. */
  maxStreamRetries?: number | undefined;
  /** Backoff tuning (`initialDelayMs` 1000, `maxDelayMs` 32 000, `maxRetryAfterMs` 60 000, `jitter` 0.25). */
  retry?: Partial<Omit<RetryPolicy, 'maxRetries'>> | undefined;
  /** fetch implementation (default: the global `fetch`, looked up per request). */
  fetch?: Fetch | undefined;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string> | undefined;
  /** Receives deprecation warnings. Default: `console`. */
  logger?: { warn(message: string): void } | undefined;
  /** Called before each retry. */
  onRetry?: ((event: RetryEvent) => void) | undefined;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const WARNING_PREFIX = '[@inference-platform/sdk]';

function env(name: string): string | undefined {
  const value = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
  return value === '' ? undefined : value;
}

const trimSlash = (url: string): string => url.replace(/\/+$/, '');

/**
 * A base URL from its option, else its environment variable: absolute http(s), no query or
 * fragment (paths are appended to it), without its trailing slash; undefined when neither
 * is set. A bad one fails here, naming where it came from, not later as a refused call.
 */
function baseUrlFrom(value: string | undefined, option: string, variable: string): string | undefined {
  const from = value ? `\`${option}\`` : `the ${variable} environment variable`;
  const url = value || env(variable);
  if (!url) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.search || parsed.hash) {
    throw new PlatformError(
      `Invalid base URL '${url}' in ${from}: give an absolute http(s) URL without query or fragment, e.g. new Platform({ ${option}: "https://api.example.com" }) or ${variable}=https://api.example.com.`,
    );
  }
  return trimSlash(url);
}

/**
 * `User-Agent` outside browsers. A page or a web worker sends its own; ours would be a
 * header the server's CORS preflight must allow (browsers that let a script set it, such
 * as Firefox, would have the call refused).
 */
const inBrowser = ['document', 'WorkerGlobalScope'].some((name) => typeof (globalThis as Record<string, unknown>)[name] !== 'undefined');
const USER_AGENT: Record<string, string> = inBrowser ? {} : { 'user-agent': `@inference-platform/sdk/${VERSION}` };

const PAGINATED: ReadonlySet<string> = new Set(paginatedOperations);

/** What a client derived with `withOptions()` takes over from its parent. */
interface Inherited {
  tokens: TokenCache | undefined;
  credentials: ClientCredentials | undefined;
  baseUrl: string;
  warned: Set<string>;
}
/** Keyed by the options object `withOptions()` hands to the constructor (no public surface). */
const inherited = new WeakMap<PlatformOptions, Inherited>();

export interface Platform extends PlatformOperations, PlatformResources {}

/**
 * The platform client. Operations are grouped in resource namespaces generated from the
 * contract: `client.chat.completions.create(body)`, `client.management.agents.get(id)`,
 * ... (path parameters first, then the body, then the query, then request options).
 * Every operation is also a method named by its operationId (`createGuardedChatCompletion`,
 * `listAgents`, ...): the low-level surface, where deprecated operations live.
 */
export class Platform {
  /** Base URL of the inference and data API. */
  readonly baseUrl: string;
  /** Base URL of the platform-management API ('' when not configured). */
  readonly managementBaseUrl: string;
  readonly #options: PlatformOptions;
  readonly #apiKey: string | undefined;
  readonly #tokens: TokenCache | undefined;
  readonly #policy: RetryPolicy;
  /** The policy of a streaming request: `maxStreamRetries`, never more than `maxRetries`. */
  readonly #streamPolicy: RetryPolicy;
  /** Default headers of every request (lower-case names). */
  readonly #headers: Record<string, string>;
  readonly #warned: Set<string>;

  constructor(options: PlatformOptions = {}) {
    const parent = inherited.get(options);
    this.#options = { ...options };
    this.#warned = parent?.warned ?? new Set();
    const baseUrl = baseUrlFrom(options.baseUrl, 'baseUrl', 'PLATFORM_BASE_URL');
    if (!baseUrl) {
      throw new PlatformError(
        'Missing base URL: pass `baseUrl` to new Platform({ baseUrl: "https://..." }) or set the PLATFORM_BASE_URL environment variable.',
      );
    }
    this.baseUrl = baseUrl;
    // Optional: a client that never calls the management API needs none (its calls then reject, naming the option).
    this.managementBaseUrl = baseUrlFrom(options.managementBaseUrl, 'managementBaseUrl', 'PLATFORM_MANAGEMENT_BASE_URL') ?? '';
    this.#policy = { ...DEFAULT_RETRY_POLICY, ...options.retry, maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES };
    this.#streamPolicy = { ...this.#policy, maxRetries: Math.min(options.maxStreamRetries ?? DEFAULT_STREAM_MAX_RETRIES, this.#policy.maxRetries) };
    this.#headers = mergeHeaders({ ...USER_AGENT }, options.defaultHeaders);
    const credentials = options.clientCredentials;
    this.#apiKey = options.apiKey || (credentials || options.apiKey === null ? undefined : env('PLATFORM_API_KEY'));
    if (!this.#apiKey && !credentials && options.apiKey !== null) {
      throw new PlatformError(
        'Missing API key: pass `apiKey` to new Platform({ apiKey: "sk_..." }) or set the PLATFORM_API_KEY environment variable.',
      );
    }
    if (credentials && !options.apiKey) {
      // A derived client with the same credentials and token endpoint shares its parent's token.
      const shared = parent?.tokens && parent.credentials === credentials && parent.baseUrl === this.baseUrl ? parent.tokens : undefined;
      this.#tokens = shared ?? new TokenCache(() => this.#fetchToken(credentials));
    }
    // The resource namespaces (generated from the contract and the mapping file).
    for (const [at, operationId, pathNames, hasBody, hasQuery] of resourceMethods) {
      const segments = at.split('.');
      const name = segments.pop()!;
      let node = this as unknown as Record<string, unknown>;
      for (const segment of segments) node = (node[segment] ??= {}) as Record<string, unknown>;
      node[name] = (...args: unknown[]): unknown => {
        const params: { path?: Record<string, unknown>; body?: unknown; query?: Record<string, unknown> } = {};
        let i = 0;
        for (const pathName of pathNames) {
          const value = args[i++];
          if (value === undefined || value === null || value === '') {
            return new APIPromise(Promise.reject(new PlatformError(`client.${at}(): the path parameter ${pathName} is missing.`)));
          }
          (params.path ??= {})[pathName] = value;
        }
        if (hasBody && args[i++] !== undefined) params.body = args[i - 1];
        if (hasQuery && args[i++] !== undefined) params.query = args[i - 1] as Record<string, unknown>;
        return (this.call as (op: string, p: unknown, o: unknown) => unknown)(operationId, params, args[i]);
      };
    }
  }

  /**
   * A client with the same options except `overrides`. It shares this client's
   * deprecation warnings (each logged once in all) and, with the same client credentials
   * and base URL, its OAuth access token.
   */
  withOptions(overrides: PlatformOptions): Platform {
    const options = { ...this.#options, ...overrides };
    inherited.set(options, { tokens: this.#tokens, credentials: this.#options.clientCredentials, baseUrl: this.baseUrl, warned: this.#warned });
    return new Platform(options);
  }

  /** Calls an operation by its operationId (what every method does). */
  call<K extends Operation>(operationId: K, ...args: RequestArgs<K>): ReturnType<PlatformOperations[K]>;
  call(operationId: Operation, params?: Params, options?: RequestOptions): APIPromise<unknown> {
    const route = Object.prototype.hasOwnProperty.call(routesById, operationId) ? routesById[operationId] : undefined;
    // Rejected, never thrown: every call returns a promise.
    if (!route) return new APIPromise(Promise.reject(new PlatformError(`Unknown operation: ${String(operationId)}`)));
    this.#warnDeprecated(route);
    const first = this.#send(route, params ?? {}, options ?? {});
    if (!PAGINATED.has(route.operationId)) return new APIPromise(first);
    const startCursor = typeof params?.query?.cursor === 'string' ? params.query.cursor : undefined;
    return new PagePromise(first, (cursor) => this.#send(route, { ...params, query: { ...params?.query, cursor } }, options ?? {}), startCursor);
  }

  async #send(route: ClientRoute, params: Params, options: RequestOptions): Promise<WithResponse<unknown>> {
    const streaming = route.sse !== null && isObject(params.body) && params.body.stream === true;
    const baseUrl = options.baseUrl ? trimSlash(options.baseUrl) : route.api === 'management' ? this.managementBaseUrl : this.baseUrl;
    if (!baseUrl) {
      throw new PlatformError(
        `${route.operationId}() is a management operation: pass \`managementBaseUrl\` to new Platform({ managementBaseUrl: "https://..." }) or set the PLATFORM_MANAGEMENT_BASE_URL environment variable (it is checked when set, and needed only by management calls).`,
      );
    }
    const policy = streaming ? this.#streamPolicy : this.#policy;
    const tokens = this.#tokens;
    const sent = await send(buildRequest(route, params, baseUrl, this.#headers, options.headers), {
      fetch: options.fetch ?? this.#options.fetch,
      timeoutMs: options.timeout ?? this.#options.timeout ?? DEFAULT_TIMEOUT_MS,
      policy: options.maxRetries === undefined ? policy : { ...policy, maxRetries: options.maxRetries },
      signal: options.signal,
      idempotencyKey: options.idempotencyKey ?? (route.idempotent ? newIdempotencyKey() : undefined),
      stream: streaming,
      credential: route.bearer ? this.#credential : undefined,
      reauthorize: tokens && route.bearer ? (token) => tokens.invalidate(token) : undefined,
      onRetry: options.onRetry ?? this.#options.onRetry,
    });
    const { response } = sent;
    if (!streaming) {
      const body = sent.body ?? new ArrayBuffer(0);
      return withResponse(await parseBody(response, body), response.headers, () => unreadCopy(response, body));
    }
    const contentType = response.headers.get('content-type') ?? '';
    if (!contentType.includes('text/event-stream')) {
      sent.abort?.();
      sent.dispose?.();
      throw new PlatformError(`Expected a text/event-stream answer to a streaming request, got '${contentType || 'no content type'}'.`);
    }
    const { abort, dispose, idle } = sent;
    const control = { abort, dispose, idle, signal: options.signal };
    const stream = route.sse === 'named' ? new ResponseStream(response, control) : new ChatCompletionStream(response, control);
    return withResponse(stream, response.headers, () => (idle && dispose ? rawStreamResponse(response, idle, dispose) : response));
  }

  /** The credential of one attempt (a 401 then invalidates that very token). */
  readonly #credential = (): string | undefined | Promise<string | undefined> => (this.#tokens ? this.#tokens.get() : this.#apiKey);

  async #fetchToken(credentials: ClientCredentials): Promise<AccessToken> {
    this.#warnOnce(
      'oauth',
      `${WARNING_PREFIX} OAuth 2.0 client credentials are deprecated and sunset by December 2026; create an API key (createKey) and pass it as apiKey.`,
    );
    const route = routesById.createOAuthToken;
    const { data } = await this.#send(
      route,
      { body: { grant_type: 'client_credentials', client_id: credentials.clientId, client_secret: credentials.clientSecret } },
      {},
    );
    return data as AccessToken;
  }

  #warnDeprecated(route: ClientRoute): void {
    if (!route.deprecated) return;
    const replacement = route.replacedBy ? `; use ${route.replacedBy}() instead` : '';
    const sunset = route.sunset ? ` and stops working after ${route.sunset}` : '';
    this.#warnOnce(route.operationId, `${WARNING_PREFIX} ${route.operationId}() (${route.method.toUpperCase()} ${route.path}) is deprecated${sunset}${replacement}.`);
  }

  #warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    (this.#options.logger ?? console).warn(message);
  }

  static {
    // One method per operationId of the contract, on the prototype.
    for (const route of Object.values(routesById)) {
      const operationId = route.operationId as Operation;
      Object.defineProperty(Platform.prototype, operationId, {
        configurable: true,
        writable: true,
        value(this: Platform, params?: Params, options?: RequestOptions) {
          return (this.call as (op: Operation, p?: Params, o?: RequestOptions) => unknown)(operationId, params, options);
        },
      });
    }
  }
}
