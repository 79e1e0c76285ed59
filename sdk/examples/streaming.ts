import { Platform, RateLimitError } from '@inference-platform/sdk';

const platform = new Platform();

// Chat completions: `stream: true` returns an async iterator of chunks.
const stream = await platform.chat.completions.create({
  model: 'gloo-openai-gpt-5-mini',
  stream: true,
  messages: [{ role: 'user', content: 'Define grace.' }],
});
for await (const chunk of stream) {
  if ('error' in chunk) continue; // never yielded: error events are thrown
  process.stdout.write(chunk.choices[0]?.delta.content ?? '');
}

// Grounded: the citations event comes first; helpers collect text, usage and the end reason.
const grounded = await platform.grounded.chat.create({
  model_family: 'anthropic',
  rag_publisher: 'Example Publishing',
  include_citations: true,
  stream: true,
  stream_options: { include_usage: true },
  messages: [{ role: 'user', content: 'What does the author say about rest?' }],
});
try {
  const result = await grounded.collect();
  console.log(result.text, result.usage?.total_tokens, result.citations?.map((c) => c.title));
  if (result.contentFiltered) console.log('The answer was cut by the content filter (not an error).');
} catch (error) {
  // A failure after the stream started arrives as the typed error, with its trace id.
  if (error instanceof RateLimitError) console.error(error.name, error.retryable, error.traceId);
  else throw error;
}

// Responses API: named events, typed by `event.type`.
const events = await platform.responses.create({ model: 'gloo-openai-gpt-5-mini', input: 'Define mercy in one sentence.', stream: true });
for await (const event of events) {
  switch (event.type) {
    case 'response.output_text.delta':
      process.stdout.write(event.delta);
      break;
    case 'response.completed':
      console.log('\nusage:', event.response.usage?.total_tokens);
      break;
  }
  if (event.sequence_number > 1000) break; // leaving the loop aborts the request
}

// Tool calls are assembled from their deltas; finalMessage() gives the whole assistant message.
const tools = await platform.chat.completions.create({
  model: 'gloo-openai-gpt-5-mini',
  stream: true,
  messages: [{ role: 'user', content: 'What is the weather in Lisbon?' }],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
});
const message = await tools.finalMessage();
for (const call of message.tool_calls ?? []) console.log(call.function.name, JSON.parse(call.function.arguments));

// In a web framework: pass the events on as newline-delimited JSON.
export async function handler(): Promise<Response> {
  const live = await platform.chat.completions.create({ auto_routing: true, stream: true, messages: [{ role: 'user', content: 'Hi' }] });
  return new Response(live.toReadableStream(), { headers: { 'content-type': 'application/x-ndjson' } });
}
