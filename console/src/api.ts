// The management API as the console calls it: same origin (the console is served by the
// management port), the key from the tab's sessionStorage as a bearer token, `{data, meta}`
// answers unwrapped, and error answers turned into ApiFailure with the server's message.
import type { Scope } from '../../generated/client/types.gen.js';

const KEY_STORAGE = 'platform-console.key';

/** The key lives in this tab's sessionStorage only: never a cookie, a URL or localStorage. */
export const storedKey = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (key: string) => sessionStorage.setItem(KEY_STORAGE, key),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly traceId: string | null,
  ) {
    super(message);
  }
}

export interface Envelope<T> {
  data: T;
  meta: { hasMore: boolean; nextCursor: string | null };
}

type Query = Record<string, string | number | undefined | null>;

export async function call<T>(path: string, options: { method?: string; body?: unknown; query?: Query; key?: string } = {}): Promise<Envelope<T>> {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const url = params.size > 0 ? `${path}?${params}` : path;
  const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? storedKey.get() ?? ''}` };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method: options.method ?? 'GET', headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const message = body?.error?.message ?? body?.detail ?? `HTTP ${res.status}`;
    throw new ApiFailure(res.status, message, body?.trace_id ?? res.headers.get('x-trace-id'));
  }
  return body as Envelope<T>;
}

/** Every page of a list (the console's lists are short: publishers, keys). */
export async function callAll<T>(path: string, query: Query = {}): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Envelope<T[]> = await call<T[]>(path, { query: { ...query, limit: 100, cursor } });
    all.push(...page.data);
    cursor = page.meta.hasMore ? page.meta.nextCursor : null;
  } while (cursor);
  return all;
}

export type { Scope };
