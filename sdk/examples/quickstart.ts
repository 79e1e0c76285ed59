import { APIError, NotFoundError, Platform } from '@inference-platform/sdk';

// Reads PLATFORM_API_KEY, PLATFORM_BASE_URL and PLATFORM_MANAGEMENT_BASE_URL when not given.
const platform = new Platform({
  apiKey: process.env.PLATFORM_API_KEY,
  baseUrl: 'https://api.example.com',
  managementBaseUrl: 'https://manage.example.com',
});

const completion = await platform.chat.completions.create({
  auto_routing: true,
  tradition: 'evangelical',
  messages: [{ role: 'user', content: 'What is hope?' }],
});
console.log(completion.choices[0]?.message.content, completion.routing_mechanism);

// Management operations go to the management base URL by themselves.
const health = await platform.management.health();
console.log(health.data.status);

// Path parameters are plain leading arguments; the body comes next, options last.
const agent = await platform.management.agents.get('agt_42', { timeout: 5_000 });
console.log(agent.data.name);

// Every call can also give the HTTP response (body unread), its trace id and rate-limit headers.
const { data: models, response, traceId, rateLimit } = await platform.models.list().withResponse();
console.log(models.data.length, response.status, traceId, rateLimit?.remaining);

// Streaming: `stream: true` gives an async iterator of chunks (leaving the loop aborts the request).
const stream = await platform.chat.completions.create({ auto_routing: true, stream: true, messages: [{ role: 'user', content: 'Define grace.' }] });
for await (const chunk of stream) {
  if ('choices' in chunk) process.stdout.write(chunk.choices[0]?.delta.content ?? '');
}

// Errors are typed, with the server's code, name, retryability and trace id.
try {
  await platform.items.get('no-such-item');
} catch (error) {
  if (error instanceof NotFoundError) console.error(error.status, error.name, error.traceId);
  else if (error instanceof APIError) console.error(error.code, error.retryable, error.traceId);
  else throw error;
}

// Lists page through cursors by themselves.
for await (const key of platform.management.keys.list({ limit: 50 })) console.log(key.id, key.label);
