import { Platform } from '@inference-platform/sdk';

// Defaults: 5 attempts for ordinary requests, 3 for streams (before the first event),
// 2^n s backoff plus jitter, Retry-After honoured, 120 s timeout per attempt.
const platform = new Platform({
  maxRetries: 4,
  maxStreamRetries: 2,
  timeout: 60_000,
  retry: { initialDelayMs: 1000, maxRetryAfterMs: 30_000 },
  onRetry: ({ attempt, delayMs, reason }) => console.warn(`retry ${attempt} in ${delayMs} ms: ${reason}`),
});

// Per-request overrides: timeout, retries, headers, an AbortSignal (merged with the
// timeout), an idempotency key (POSTs get a fresh one per call, kept across its retries).
const controller = new AbortController();
setTimeout(() => controller.abort(), 5_000);
const embeddings = await platform.embeddings.create(
  { model: 'gloo-openai-text-embedding-3-small', input: ['grace', 'mercy'] },
  { timeout: 10_000, maxRetries: 1, signal: controller.signal, idempotencyKey: 'embed-batch-42', headers: { 'X-Request-Source': 'nightly' } },
);
console.log(embeddings.data.length);

// Any fetch implementation can be injected (tests, proxies, edge runtimes).
const traced = platform.withOptions({
  fetch: async (request) => {
    console.log(request.method, request.url);
    return fetch(request);
  },
});
await traced.management.health();
