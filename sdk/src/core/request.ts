// The HTTP request of one call, from its contract route and parameters. URL and body follow
// the generated client's own rules (hey-api's path, query and body serializers); what
// does not change between calls (the serializer of each body media type, the query
// serializer, the client's default headers) is settled once.
import type { ClientRoute } from '../../../generated/contract/client-routes.js';
import { formBodyMediaTypes } from '../../../generated/sdk/methods.js';
import { createConfig } from '../../../generated/client/client/utils.gen.js';
import {
  formDataBodySerializer,
  jsonBodySerializer,
  urlSearchParamsBodySerializer,
  type QuerySerializer,
} from '../../../generated/client/core/bodySerializer.gen.js';
import { getUrl } from '../../../generated/client/core/utils.gen.js';
import type { OutgoingRequest } from './transport.js';

/** `{ body, path, query }` of a call, as the operation types define them. */
export type Params = { body?: unknown; path?: Record<string, unknown>; query?: Record<string, unknown> };

/** Per-request headers: `null` removes a default header, `undefined` is ignored. */
export type HeaderOverrides = Record<string, string | null | undefined>;

interface BodyRule {
  serialize: (body: unknown) => unknown;
  /** Undefined for multipart: fetch writes the content type with its boundary. */
  contentType: string | undefined;
}

const JSON_BODY: BodyRule = { serialize: jsonBodySerializer.bodySerializer, contentType: 'application/json' };
const BODY_RULES: Readonly<Record<string, BodyRule>> = {
  'multipart/form-data': { serialize: formDataBodySerializer.bodySerializer, contentType: undefined },
  'application/x-www-form-urlencoded': { serialize: urlSearchParamsBodySerializer.bodySerializer, contentType: 'application/x-www-form-urlencoded' },
};
const bodyRule = (operationId: string): BodyRule => BODY_RULES[(formBodyMediaTypes as Record<string, string>)[operationId] ?? ''] ?? JSON_BODY;

/** The generated client's default query serializer (form style, exploded arrays, deep objects). */
const querySerializer = createConfig().querySerializer as QuerySerializer;

/** Merges header records into `into` under lower-case names (`null` deletes). */
export function mergeHeaders(into: Record<string, string>, ...sources: Array<HeaderOverrides | undefined>): Record<string, string> {
  for (const source of sources) {
    if (!source) continue;
    for (const name of Object.keys(source)) {
      const value = source[name];
      if (value === null) delete into[name.toLowerCase()];
      else if (value !== undefined) into[name.toLowerCase()] = value;
    }
  }
  return into;
}

/**
 * The request of one call. `baseHeaders` (lower-case names, the client's defaults) is
 * copied, never changed; `overrides` are the call's own headers.
 */
export function buildRequest(route: ClientRoute, params: Params, baseUrl: string, baseHeaders: Record<string, string>, overrides?: HeaderOverrides): OutgoingRequest {
  const url = getUrl({ baseUrl, path: params.path, query: params.query, querySerializer, url: route.path });
  let body: OutgoingRequest['body'];
  let contentType: string | undefined;
  if (params.body !== undefined) {
    const rule = bodyRule(route.operationId);
    const serialized = rule.serialize(params.body) as OutgoingRequest['body'];
    // An empty serialization (a form without fields) is no body, as in the generated client.
    if (serialized !== '') {
      body = serialized;
      contentType = rule.contentType;
    }
  }
  const headers = contentType ? { 'content-type': contentType, ...baseHeaders } : { ...baseHeaders };
  return { method: route.method.toUpperCase(), url, headers: overrides ? mergeHeaders(headers, overrides) : headers, body };
}
