import { Platform } from '@inference-platform/sdk';

// Deprecated (sunset December 2026): OAuth 2.0 client credentials. The SDK fetches the
// token from /oauth2/token, caches it, refreshes it before it expires, and logs one
// deprecation warning. Prefer an API key.
const platform = new Platform({
  clientCredentials: { clientId: process.env.PLATFORM_CLIENT_ID ?? '', clientSecret: process.env.PLATFORM_CLIENT_SECRET ?? '' },
});
const models = await platform.models.list();
console.log(models.data.map((m) => m.id));

// Deprecated operations are reachable only by their own (struck-through) operationId; they
// still work and log one warning naming their replacement:
// "createResponseV1() (POST /ai/v1/responses) is deprecated ...; use createResponse() instead."
await platform.createResponseV1({ body: { model: 'gloo-openai-gpt-5-mini', input: 'Hello' } });
