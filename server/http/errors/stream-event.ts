import type { RouteDefinition } from '../../../generated/contract/routes.js';
import { renderError, toApiError } from './render.js';

/**
 * The event a stream ends with when it fails after the 200 was sent (spec 6): a chat chunk
 * with `finish_reason: "error"` and the enriched error, or a named `error` event.
 */
export function streamErrorEvent(route: RouteDefinition, error: unknown, traceId: string, sequence: number, last?: object): object {
  const body = renderError(toApiError(error), 'AIError', traceId) as { error: Record<string, unknown>; trace_id: string };
  if (route.sse === 'named') {
    return {
      type: 'error',
      sequence_number: sequence,
      code: body.error.name,
      message: body.error.message,
      param: null,
      error: body.error,
      trace_id: traceId,
    };
  }
  // The error chunk continues the stream: same completion id, creation time and model.
  const before = (last ?? {}) as { id?: unknown; created?: unknown; model?: unknown };
  return {
    id: typeof before.id === 'string' ? before.id : `chatcmpl-${traceId.replace(/^trc_/, '')}`,
    object: 'chat.completion.chunk',
    created: typeof before.created === 'number' ? before.created : Math.floor(Date.now() / 1000),
    model: typeof before.model === 'string' ? before.model : 'unknown',
    choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
    error: body.error,
    trace_id: traceId,
  };
}
