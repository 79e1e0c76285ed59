// The rate-limit admission stage, on every operation that declares 429 (the inference
// operations): a caller's request counts against its API key's quota and its organization's,
// in requests per minute and, for model calls, tokens per minute, where a request's tokens
// are its worst case when admitted (prompt estimate + max_tokens, as OpenAI counts them).
// Over a quota: 429 QUOTA_EXCEEDED with Retry-After and X-RateLimit-Limit / -Remaining /
// -Reset. It runs before idempotency and billing: a refused request holds no credit, and
// its 429 is never stored as the answer of its Idempotency-Key (the retry must run).
import type { RequestHandler } from 'express';
import { ApiError } from '../../errors.js';
import type { AdmissionStage } from '../router.js';
import type { Principal } from '../../identity/principal.js';
import { isInferenceOperation } from './billing.js';
import type { Estimator } from '../../billing/estimate.js';
import type { Quota, QuotaSettings } from '../../limits/quotas.js';
import type { RateLimiter } from '../../limits/rate-limiter.js';
import type { Counter } from '../../limits/window.js';

interface Limited extends Counter {
  scope: 'key' | 'organization';
  unit: 'requests' | 'tokens';
}

const pass: RequestHandler = (_req, _res, next) => next();

function countersOf(quota: Quota | undefined, scope: Limited['scope'], key: string, tokens: number | null): Limited[] {
  if (!quota) return [];
  const counters: Limited[] = [];
  if (quota.requestsPerMinute !== null) counters.push({ key: `${key}:requests`, limit: quota.requestsPerMinute, cost: 1, scope, unit: 'requests' });
  if (quota.tokensPerMinute !== null && tokens !== null) counters.push({ key: `${key}:tokens`, limit: quota.tokensPerMinute, cost: tokens, scope, unit: 'tokens' });
  return counters;
}

export function rateLimitStage(limiter: RateLimiter, quotas: QuotaSettings, estimator: Estimator): AdmissionStage {
  return (route) => {
    if (!('429' in route.errorBodies)) return pass;
    const metered = isInferenceOperation(route);
    const handler: RequestHandler = async (req, res, next) => {
      const principal = res.locals.principal as Principal | undefined;
      if (!principal) return next();
      const org = principal.organizationId;
      const { organization, keys, keyDefault } = await quotas.of(org);
      const keyQuota = principal.kind === 'api_key' ? (keys.get(principal.credentialId) ?? keyDefault ?? undefined) : undefined;
      if (!organization && !keyQuota) return next();
      let tokens: number | null = null;
      // Only a tokens-per-minute quota needs the estimate (billing reuses it).
      if (metered && (keyQuota?.tokensPerMinute != null || organization?.tokensPerMinute != null)) {
        const estimate = await estimator.of(res, route, req.body, org);
        tokens = estimate.promptTokens + estimate.outputTokens;
      }
      // One hash tag per organization: every counter of a request lives in one Redis Cluster slot.
      const base = `ratelimit:{${org}}`;
      const counters = [
        ...countersOf(keyQuota, 'key', `${base}:key:${principal.credentialId}`, tokens),
        ...countersOf(organization ?? undefined, 'organization', `${base}:org`, tokens),
      ];
      if (counters.length === 0) return next();
      const decision = await limiter.take(counters);
      if (decision.allowed) return next();
      const refused = counters[decision.index];
      limiter.refusals.inc({ scope: refused.scope, unit: refused.unit });
      const whose = refused.scope === 'key' ? "this API key's" : "the organization's";
      const Whose = whose[0].toUpperCase() + whose.slice(1);
      const message =
        refused.unit === 'tokens' && refused.cost > refused.limit
          ? `This request's ${refused.cost} tokens (prompt estimate + max_tokens) exceed ${whose} limit of ${refused.limit} tokens per minute; lower max_tokens.`
          : `${Whose} limit of ${refused.limit} ${refused.unit} per minute is reached; retry in ${decision.retryAfterS} s.`;
      throw new ApiError('QUOTA_EXCEEDED', message, {
        headers: {
          'Retry-After': String(decision.retryAfterS),
          'X-RateLimit-Limit': String(decision.limit),
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': String(decision.resetS),
        },
      });
    };
    return handler;
  };
}
