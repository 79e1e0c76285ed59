// Rate-limit settings. An organization's plan (RATE_LIMIT_PLANS, assigned per organization,
// else RATE_LIMIT_DEFAULT_PLAN) supplies default quotas: one for the whole organization and
// one for each of its keys. Rows of rate_limits override them: an organization-wide row
// (api_key_id null) replaces the plan's organization quota, a row per API key replaces the
// plan's key quota for that key; either may set requests and/or tokens per minute, and no
// quota at all means no limit. They are read once per organization every QUOTA_CACHE_MS,
// never per request: a change takes effect within that time on every instance.
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Config, RatePlan } from '../config.js';
import { ApiError } from '../errors.js';

export interface Quota {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

export interface OrganizationQuotas {
  organization: Quota | null;
  keys: ReadonlyMap<string, Quota>;
  /** The quota of each key without a row of its own (the plan's). */
  keyDefault: Quota | null;
}

export type PlanSettings = Pick<Config, 'rateLimitPlans' | 'rateLimitDefaultPlan'>;

function planQuota(quota: RatePlan['organization']): Quota | null {
  return quota ? { requestsPerMinute: quota.rpm ?? null, tokensPerMinute: quota.tpm ?? null } : null;
}

export const QUOTA_CACHE_MS = 10_000;

export class QuotaSettings {
  /** One small entry per organization that made a request: bounded by the organizations. */
  private readonly cache = new Map<string, { until: number; quotas: Promise<OrganizationQuotas> }>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly plans: PlanSettings = { rateLimitPlans: {}, rateLimitDefaultPlan: undefined },
    private readonly clock: () => number = Date.now,
  ) {}

  /** Puts the organization on a plan of RATE_LIMIT_PLANS (null: the default plan). */
  async setPlan(organizationId: string, plan: string | null): Promise<void> {
    if (plan !== null && !(plan in this.plans.rateLimitPlans)) {
      const known = Object.keys(this.plans.rateLimitPlans);
      throw new ApiError('INVALID_REQUEST', `No rate-limit plan ${plan} (RATE_LIMIT_PLANS has ${known.length ? known.join(', ') : 'none'}).`);
    }
    await this.prisma.organization.update({ where: { id: organizationId }, data: { ratePlan: plan } });
    this.cache.delete(organizationId);
  }

  /** The organization's quotas, from memory when read less than QUOTA_CACHE_MS ago. */
  of(organizationId: string): Promise<OrganizationQuotas> {
    const now = this.clock();
    const cached = this.cache.get(organizationId);
    if (cached && cached.until > now) return cached.quotas;
    const quotas = this.load(organizationId);
    this.cache.set(organizationId, { until: now + QUOTA_CACHE_MS, quotas });
    // A failed read is not remembered: the next request asks again.
    quotas.catch(() => this.cache.delete(organizationId));
    return quotas;
  }

  /** Sets (or, with both limits null, removes: back to the plan's) the organization's or one of its keys' quota. */
  async set(organizationId: string, apiKeyId: string | null, quota: Quota): Promise<void> {
    if (apiKeyId !== null) {
      const key = await this.prisma.apiKey.findFirst({ where: { id: apiKeyId, organizationId }, select: { id: true } });
      if (!key) throw new ApiError('NOT_FOUND', `No API key ${apiKeyId} in this organization`, { gatewayCode: 'not_found' });
    }
    const clear = quota.requestsPerMinute === null && quota.tokensPerMinute === null;
    await this.prisma.$transaction(async (tx) => {
      // One row per key, and one organization-wide row (a partial unique index Prisma cannot name).
      await tx.rateLimit.deleteMany({ where: { organizationId, apiKeyId } });
      if (!clear) await tx.rateLimit.create({ data: { organizationId, apiKeyId, ...quota } });
    });
    this.cache.delete(organizationId);
  }

  private async load(organizationId: string): Promise<OrganizationQuotas> {
    const org = await this.prisma.organization.findUnique({ where: { id: organizationId }, select: { ratePlan: true, rateLimits: true } });
    // A plan that left the configuration supplies nothing (its organizations fall back to no defaults).
    const plan: RatePlan = this.plans.rateLimitPlans[org?.ratePlan ?? this.plans.rateLimitDefaultPlan ?? ''] ?? {};
    let organization = planQuota(plan.organization);
    const keys = new Map<string, Quota>();
    for (const row of org?.rateLimits ?? []) {
      const quota = { requestsPerMinute: row.requestsPerMinute, tokensPerMinute: row.tokensPerMinute };
      if (row.apiKeyId === null) organization = quota;
      else keys.set(row.apiKeyId, quota);
    }
    return { organization, keys, keyDefault: planQuota(plan.key) };
  }
}
