// Does one answer of the server match what openapi.yaml declares for its operation?
// Status, platform headers, media type, body (JSON or SSE events) and the error trace id.
// The server validates its own JSON responses in tests, but not the ones its error
// handler writes for statuses the operation does not declare, nor headers, nor streams.
import { routesById, type OperationId } from '../../generated/contract/routes.js';
import { contractDocument, contractProblems, eventProblems } from './contract.js';

export interface ConformanceProblem {
  rule: 'status' | 'header' | 'media-type' | 'body' | 'event' | 'trace-id';
  /** What the rule is about (the status, the header name, the schema path...): findings are grouped by it. */
  subject: string;
  message: string;
}

export interface ObservedResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Headers that carry platform semantics and so must be declared where they are sent.
 * Transport headers (Content-Length, Connection, Date, Vary, ...) are HTTP's business.
 */
const PLATFORM_HEADERS = ['x-trace-id', 'x-request-id', 'idempotent-replayed', 'deprecation', 'sunset', 'link', 'retry-after', 'x-sources-returned', 'x-gateway-route', 'allow', 'www-authenticate', 'x-should-retry'];
const isPlatformHeader = (name: string) => PLATFORM_HEADERS.includes(name) || name.startsWith('x-ratelimit-');

type Json = Record<string, any>;

/** The declared response of (operation, status), through a `components/responses` reference; undefined when not declared. */
function declaredResponse(operationId: OperationId, status: number): Json | undefined {
  const route = routesById[operationId];
  const declared = contractDocument.paths[route.path][route.method].responses?.[String(status)];
  if (!declared?.$ref) return declared;
  return contractDocument.components.responses[declared.$ref.split('/').pop()];
}

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** `data:` payloads of a `text/event-stream` body, one per event (`[DONE]` is the stream's end, not an event). */
function sseData(body: string): string[] {
  return body
    .split(/\r?\n\r?\n/)
    .map((event) => event.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).replace(/^ /, '')).join('\n'))
    .filter((data) => data !== '' && data !== '[DONE]');
}

function bodyProblems(operationId: OperationId, status: number, mediaType: string, body: string): ConformanceProblem[] {
  if (mediaType === 'application/json') {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return [{ rule: 'body', subject: 'not JSON', message: `body is not JSON: ${body.slice(0, 80)}` }];
    }
    return contractProblems(operationId, status, value).map((message) => ({ rule: 'body', subject: message, message }));
  }
  if (mediaType === 'text/event-stream') {
    return sseData(body).flatMap((data): ConformanceProblem[] => {
      try {
        return eventProblems(operationId, JSON.parse(data)).map((message) => ({ rule: 'event', subject: message, message: `${message} in ${data.slice(0, 120)}` }));
      } catch {
        return [{ rule: 'event', subject: 'not JSON', message: `event data is not JSON: ${data.slice(0, 80)}` }];
      }
    });
  }
  return [];
}

/** Every error (4xx/5xx) names its trace id in the body, the same one as the X-Trace-Id header. */
function traceIdProblems(response: ObservedResponse): ConformanceProblem[] {
  if (response.status < 400) return [];
  let traceId: unknown;
  try {
    traceId = JSON.parse(response.body)?.trace_id;
  } catch {
    return [{ rule: 'trace-id', subject: 'no JSON body', message: `error body is not JSON: ${JSON.stringify(response.body.slice(0, 80))}` }];
  }
  if (typeof traceId !== 'string' || traceId === '') return [{ rule: 'trace-id', subject: 'missing', message: 'error body has no trace_id' }];
  const header = first(response.headers['x-trace-id']);
  // A replayed answer (Idempotency-Key) is the first request's body, naming that request's trace.
  const replayed = first(response.headers['idempotent-replayed']) === 'true';
  if (header !== undefined && header !== traceId && !replayed) return [{ rule: 'trace-id', subject: 'mismatch', message: `trace_id ${traceId} but X-Trace-Id ${header}` }];
  return [];
}

/** Problems of one answer against the contract; [] when it conforms. */
export function conformanceProblems(operationId: OperationId, request: { method: string }, response: ObservedResponse): ConformanceProblem[] {
  // A HEAD answer describes the GET body without sending it.
  const head = request.method.toUpperCase() === 'HEAD';
  const problems = head ? [] : traceIdProblems(response);
  const declared = declaredResponse(operationId, response.status);
  if (!declared) {
    return [{ rule: 'status', subject: String(response.status), message: `${operationId} does not declare ${response.status}` }, ...problems];
  }
  const declaredHeaders = new Map(Object.entries<Json>(declared.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header]));
  for (const name of Object.keys(response.headers)) {
    if (isPlatformHeader(name) && !declaredHeaders.has(name)) {
      problems.push({ rule: 'header', subject: name, message: `${name} is sent but not declared for ${operationId} ${response.status}` });
    }
  }
  for (const [name, header] of declaredHeaders) {
    const required = header.$ref ? contractDocument.components.headers[header.$ref.split('/').pop()]?.required : header.required;
    if (required && response.headers[name] === undefined) problems.push({ rule: 'header', subject: `missing ${name}`, message: `required header ${name} is missing` });
  }
  const contentType = first(response.headers['content-type']);
  if (head || (contentType === undefined && response.body === '')) return problems;
  const mediaType = (contentType ?? '(none)').split(';')[0].trim().toLowerCase();
  if (!declared.content?.[mediaType]) {
    problems.push({ rule: 'media-type', subject: mediaType, message: `${operationId} ${response.status} declares no ${mediaType} body` });
    return problems;
  }
  return [...problems, ...bodyProblems(operationId, response.status, mediaType, response.body)];
}
