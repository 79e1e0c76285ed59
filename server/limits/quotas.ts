// Rate-limit settings (table rate_limits): an organization-wide row (api_key_id null) caps
// the whole organization, a row per API key caps that key; either may set requests and/or
// tokens per minute, and none means no limit. They are read once per organization every
// QUOTA_CACHE_MS, never per request: a change takes effect within that time on every instance.
import type { PrismaClient } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';

export interface Quota {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

export interface OrganizationQuotas {
  organization: Quota | null;
  keys: ReadonlyMap<string, Quota>;
}

export const QUOTA_CACHE_MS = 10_000;

export class QuotaSettings {
  /** One small entry per organization that made a request: bounded by the organizations. */
  private readonly cache = new Map<string, { until: number; quotas: Promise<OrganizationQuotas> }>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly clock: () => number = Date.now,
  ) {}

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

  /** Sets (or, with both limits null, removes) the organization's or one of its keys' quota. */
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
    const rows = await this.prisma.rateLimit.findMany({ where: { organizationId } });
    let organization: Quota | null = null;
    const keys = new Map<string, Quota>();
    for (const row of rows) {
      const quota = { requestsPerMinute: row.requestsPerMinute, tokensPerMinute: row.tokensPerMinute };
      if (row.apiKeyId === null) organization = quota;
      else keys.set(row.apiKeyId, quota);
    }
    return { organization, keys };
  }
}
