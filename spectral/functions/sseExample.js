// A text/event-stream media type must carry literal SSE text in its named `examples` (their
// `value`; an `example` is checked the same way): blocks separated by a blank line, each with
// a `data:` line. Every `data:` payload except `[DONE]` must be JSON valid against the media
// type's schema (one event), and an `event:` name must equal the payload's `type`.
import { createRulesetFunction } from '@stoplight/spectral-core';
import { schema as schemaFn } from '@stoplight/spectral-functions';

export default createRulesetFunction(
  { input: { type: 'object' }, options: null },
  function sseExample(media, _opts, context) {
    const results = [];
    if (media.example !== undefined) {
      const path = [...context.path, 'example'];
      if (typeof media.example !== 'string') results.push({ message: 'A text/event-stream `example` must be literal SSE text (a string).', path });
      else results.push(...checkSse(media, media.example, path, context));
    }
    const named = Object.entries(media.examples ?? {});
    if (named.length === 0) results.push({ message: 'text/event-stream needs named `examples` of literal SSE text.', path: context.path });
    for (const [name, example] of named) {
      const at = [...context.path, 'examples', name, 'value'];
      if (typeof example?.value !== 'string') results.push({ message: `SSE example "${name}" needs a literal SSE text \`value\`.`, path: at });
      else results.push(...checkSse(media, example.value, at, context).map((r) => ({ ...r, message: `${name}: ${r.message}` })));
    }
    return results;
  },
);

function checkSse(media, text, path, context) {
  const blocks = text.split(/\n\n+/).map((b) => b.trim()).filter(Boolean);
  if (blocks.length === 0) return [{ message: 'SSE example is empty.', path }];
  const results = [];
  blocks.forEach((block, i) => {
    const lines = block.split('\n');
    const event = lines.find((l) => l.startsWith('event:'))?.slice(6).trim();
    const dataLines = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
    if (dataLines.length === 0) {
      results.push({ message: `SSE block ${i + 1} has no data: line.`, path });
      return;
    }
    const data = dataLines.join('\n');
    if (data === '[DONE]') return;
    let payload;
    try {
      payload = JSON.parse(data);
    } catch {
      results.push({ message: `SSE block ${i + 1}: data is not JSON.`, path });
      return;
    }
    if (event !== undefined && payload?.type !== event) {
      results.push({ message: `SSE block ${i + 1}: event "${event}" but payload type "${payload?.type}".`, path });
    }
    if (media.schema) {
      const errors = schemaFn(payload, { schema: media.schema, allErrors: false }, { ...context, path }) ?? [];
      for (const e of errors) results.push({ message: `SSE block ${i + 1}: ${e.message}`, path });
    }
  });
  return results;
}
