// The body of a non-streaming success, read once by the transport: parsed by its content
// type (as the generated client would), and copied into an unread `Response` only when
// the caller asks for it (`withResponse()`, `asResponse()`).
import { getParseAs } from '../../../generated/client/client/utils.gen.js';
import { APIResponseParseError } from './errors.js';

const NULL_BODY = new Set([101, 204, 205, 304]);
const decoder = new TextDecoder();

/** A fresh `Response` of the buffered answer, its body unread. */
export function unreadCopy(response: Response, body: ArrayBuffer): Response {
  const copy = new Response(NULL_BODY.has(response.status) ? null : body.slice(0), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperties(copy, { url: { value: response.url }, redirected: { value: response.redirected } });
  return copy;
}

/** The data of the answer: JSON parsed (`{}` when empty), text, a Blob, form data or the raw body. */
export async function parseBody(response: Response, body: ArrayBuffer): Promise<unknown> {
  const parseAs = getParseAs(response.headers.get('content-type')) ?? 'json';
  try {
    switch (parseAs) {
      case 'json': {
        const text = decoder.decode(body);
        return text ? JSON.parse(text) : {};
      }
      case 'text':
        return decoder.decode(body);
      case 'blob':
        return new Blob([body], { type: response.headers.get('content-type') ?? '' });
      case 'arrayBuffer':
        return body;
      case 'formData':
        return await unreadCopy(response, body).formData();
      default:
        return unreadCopy(response, body).body;
    }
  } catch (cause) {
    // A success whose body is not what its content type says (e.g. a 200 that is not JSON).
    throw new APIResponseParseError(response, { cause });
  }
}
