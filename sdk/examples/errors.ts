import {
  APIConnectionError,
  APIError,
  GcAllowanceExhaustedError,
  InsufficientCreditError,
  Platform,
  RateLimitError,
  SpendingLimitExceededError,
  UnprocessableEntityError,
  isErrorNamed,
} from '@inference-platform/sdk';

const platform = new Platform();

try {
  await platform.coding.chat.completions.create('code-assist', {
    model: 'gloo-anthropic-claude-haiku-4.5',
    messages: [{ role: 'user', content: 'Refactor this.' }],
  });
} catch (error) {
  if (error instanceof SpendingLimitExceededError) {
    // 429 / 1005: the weekly cap; never retried, adding credit does not clear it.
    console.error('Weekly spending cap reached', error.code, error.traceId);
  } else if (error instanceof GcAllowanceExhaustedError) {
    console.error('Coding allowance spent; top-up available:', error.topupAvailable);
  } else if (error instanceof InsufficientCreditError) {
    console.error('Prepaid balance is empty');
  } else if (error instanceof RateLimitError) {
    console.error('Rate limited; retry after', error.retryAfterMs, 'ms', error.rateLimit);
  } else if (error instanceof UnprocessableEntityError) {
    console.error('Invalid fields:', error.details?.map((d) => `${d.loc.join('.')}: ${d.msg}`));
  } else if (isErrorNamed(error, 'PROVIDER_TIMEOUT')) {
    console.error('Provider timed out after all retries');
  } else if (error instanceof APIError) {
    // Every API error carries the same fields, whatever body shape the server used.
    const { status, code, name, retryable, category, traceId, headers } = error;
    console.error({ status, code, name, retryable, category, traceId, server: headers.get('server') });
  } else if (error instanceof APIConnectionError) {
    console.error('Network problem or timeout:', error.message);
  } else {
    throw error;
  }
}
