// The built-in `oas3-valid-media-example` check, applied to every media type
// except text/event-stream (whose example is literal SSE text, checked by
// sseExample.js event by event).
import { createRulesetFunction } from '@stoplight/spectral-core';
import { oas } from '@stoplight/spectral-rulesets';

const builtin = oas.rules['oas3-valid-media-example'].then.function;

export default createRulesetFunction(
  { input: { type: 'object' }, options: { type: 'object' } },
  function mediaExampleExceptSse(targetVal, opts, context) {
    if (context.path.includes('text/event-stream')) return [];
    return builtin(targetVal, opts, context);
  },
);
