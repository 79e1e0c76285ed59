import { Platform } from '@inference-platform/sdk';

// Reads PLATFORM_API_KEY, PLATFORM_BASE_URL and PLATFORM_MANAGEMENT_BASE_URL when not given.
const platform = new Platform({
  apiKey: process.env.PLATFORM_API_KEY,
  baseUrl: 'https://api.example.com',
  managementBaseUrl: 'https://manage.example.com',
});

const completion = await platform.createGuardedChatCompletion({
  body: {
    auto_routing: true,
    tradition: 'evangelical',
    messages: [{ role: 'user', content: 'What is hope?' }],
  },
});
console.log(completion.choices[0]?.message.content, completion.routing_mechanism);

// Management operations go to the management base URL by themselves.
const health = await platform.getHealth();
console.log(health.data.status);

// Every call can also give the HTTP response, its trace id and rate-limit headers.
const { data: models, traceId, rateLimit } = await platform.listModels().withResponse();
console.log(models.data.length, traceId, rateLimit?.remaining);
