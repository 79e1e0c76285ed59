// API keys of an organization: created, changed and revoked only within the caller's
// scopes, shown in full once, listed obfuscated, revoked everywhere through the revocation
// bus. A key's limits (a weekly cap, a share of the organization's credit, the models it may
// call) are kept on its row; billing enforces the first two (billing/pools.ts), routing the
// third (identity/model-access.ts). A change evicts the key's cached principal everywhere,
// through the same bus as a revocation.
import type { ApiKey, PrismaClient } from '../../generated/prisma/client.js';
import type { Scope } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';
import { keysetQuery, toPage, type Page, type PageRequest } from '../storage/pagination.js';
import { newApiKey } from './credentials.js';
import { patternProblem } from './model-access.js';
import type { Principal } from './principal.js';
import type { RevocationBus } from './revocation.js';

export interface KeyView {
  id: string;
  keyPrefix: string;
  label: string | null;
  scopes: Scope[];
  status: 'active' | 'revoked' | 'expired';
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
  limits: KeyLimits;
}

/** A key's own limits; null: none (every model, for `allowedModels`). Micro-dollars as numbers, as the API has them. */
export interface KeyLimits {
  weeklyCapMicros: number | null;
  creditSharePercent: number | null;
  allowedModels: string[] | null;
}

export interface NewKey {
  scopes: Scope[];
  label?: string | null;
  expiresAt?: number | null;
  limits?: Partial<KeyLimits>;
}

export interface KeyChange {
  label?: string | null;
  /** Each limit present is set (null removes it); absent ones are kept. */
  limits?: Partial<KeyLimits>;
}

const ms = (date: Date | null) => date?.getTime() ?? null;

export function viewKey(key: ApiKey, now = Date.now()): KeyView {
  const expired = key.status === 'active' && key.expiresAt !== null && key.expiresAt.getTime() <= now;
  return {
    id: key.id,
    keyPrefix: key.keyPrefix,
    label: key.label,
    scopes: key.scopes as Scope[],
    status: expired ? 'expired' : (key.status as KeyView['status']),
    createdAt: key.createdAt.getTime(),
    expiresAt: ms(key.expiresAt),
    revokedAt: ms(key.revokedAt),
    lastUsedAt: ms(key.lastUsedAt),
    limits: {
      weeklyCapMicros: key.weeklyCapMicros === null ? null : Number(key.weeklyCapMicros),
      creditSharePercent: key.creditSharePercent,
      allowedModels: key.allowedModels.length === 0 ? null : key.allowedModels,
    },
  };
}

/** Whether the limits ask billing to keep a pool for the key (a cap or a share). */
export function spendLimited(limits: KeyLimits): boolean {
  return limits.weeklyCapMicros !== null || limits.creditSharePercent !== null;
}

/** The columns a change of limits writes (absent limits untouched); 422 for an allow-list that is not one. */
function limitColumns(limits: Partial<KeyLimits> | undefined) {
  if (!limits) return {};
  const models = limits.allowedModels;
  const problem = models ? patternProblem(models) : null;
  if (problem) {
    throw new ApiError('VALIDATION_ERROR', `allowedModels: ${problem}`, {
      gatewayCode: 'validation_error',
      issues: [{ loc: ['body', 'limits', 'allowedModels'], msg: problem, type: 'value_error', input: models }],
    });
  }
  return {
    ...(limits.weeklyCapMicros !== undefined ? { weeklyCapMicros: limits.weeklyCapMicros === null ? null : BigInt(limits.weeklyCapMicros) } : {}),
    ...(limits.creditSharePercent !== undefined ? { creditSharePercent: limits.creditSharePercent } : {}),
    ...(models !== undefined ? { allowedModels: [...new Set(models ?? [])] } : {}),
  };
}

/** The row for a new key, and the plaintext to show once. */
export function newKeyRecord(organizationId: string, input: NewKey, createdByKeyId: string | null = null) {
  const secret = newApiKey();
  return {
    plaintext: secret.plaintext,
    data: {
      organizationId,
      label: input.label ?? null,
      lookupId: secret.lookupId,
      keyHash: secret.hash,
      keyPrefix: secret.display,
      scopes: [...new Set(input.scopes)],
      expiresAt: input.expiresAt != null ? new Date(input.expiresAt) : null,
      createdByKeyId,
      ...limitColumns(input.limits),
    },
  };
}

/** A key acts only on keys within its own scopes: it may neither grant nor revoke more. */
function requireScopes(caller: Principal, scopes: readonly Scope[], action: 'grant' | 'revoke' | 'change'): void {
  const beyond = scopes.filter((scope) => !caller.scopes.includes(scope));
  if (beyond.length === 0) return;
  const what = action === 'grant' ? 'grant scopes' : `${action} a key with scopes`;
  throw new ApiError('FORBIDDEN', `A key cannot ${what} beyond its own: ${[...new Set(beyond)].join(', ')}`, { gatewayCode: 'forbidden' });
}

export class ApiKeyService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly bus: RevocationBus,
  ) {}

  async create(creator: Principal, input: NewKey): Promise<{ key: KeyView; plaintext: string }> {
    requireScopes(creator, input.scopes, 'grant');
    // Nor outlive its creator: an expiring key cannot mint a longer-lived one.
    const expiresAt = input.expiresAt ?? creator.expiresAt;
    if (creator.expiresAt !== null && expiresAt !== null && expiresAt > creator.expiresAt) {
      throw new ApiError('FORBIDDEN', 'A key cannot create a key that expires after itself', { gatewayCode: 'forbidden' });
    }
    return this.issue(creator.organizationId, { ...input, expiresAt }, creator.kind === 'api_key' ? creator.credentialId : null);
  }

  /** Creates a key without a creator's limits: for the operator CLI and the first start. */
  async issue(organizationId: string, input: NewKey, createdByKeyId: string | null = null): Promise<{ key: KeyView; plaintext: string }> {
    if (input.expiresAt != null && input.expiresAt <= Date.now()) {
      throw new ApiError('VALIDATION_ERROR', 'expiresAt must be in the future', {
        gatewayCode: 'validation_error',
        issues: [{ loc: ['body', 'expiresAt'], msg: 'Must be in the future', type: 'value_error', input: input.expiresAt }],
      });
    }
    const { data, plaintext } = newKeyRecord(organizationId, input, createdByKeyId);
    const key = await this.prisma.apiKey.create({ data });
    // An instance that was asked for this lookup id before (and cached it as unknown) must find it now.
    await this.bus.publishCreated([data.lookupId]);
    return { key: viewKey(key), plaintext };
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<KeyView>> {
    const query = keysetQuery(page);
    const rows = await this.prisma.apiKey.findMany({ ...query, where: { organizationId, ...query.where } });
    const result = toPage(rows, page.limit);
    return { ...result, items: result.items.map((k) => viewKey(k)) };
  }

  async get(organizationId: string, id: string): Promise<KeyView> {
    return viewKey(await this.find(organizationId, id));
  }

  /**
   * Changes a key's label and limits. A key may not change its own limits (it would lift its
   * own cap), nor a key with scopes beyond its own. Its cached principal is dropped on every
   * instance, so the next request runs under the new limits.
   */
  async update(caller: Principal, id: string, change: KeyChange): Promise<KeyView> {
    const key = await this.find(caller.organizationId, id);
    requireScopes(caller, key.scopes as Scope[], 'change');
    if (change.limits && caller.kind === 'api_key' && caller.credentialId === id) {
      throw new ApiError('FORBIDDEN', 'A key cannot change its own limits', { gatewayCode: 'forbidden' });
    }
    return this.change(key, change);
  }

  /** Changes a key without a caller's limits: for the operator CLI. */
  async amend(organizationId: string, id: string, change: KeyChange): Promise<KeyView> {
    return this.change(await this.find(organizationId, id), change);
  }

  private async change(key: ApiKey, change: KeyChange): Promise<KeyView> {
    const updated = await this.prisma.apiKey.update({
      where: { id: key.id },
      data: { ...(change.label !== undefined ? { label: change.label } : {}), ...limitColumns(change.limits) },
    });
    await this.bus.publish([key.keyHash]);
    return viewKey(updated);
  }

  /**
   * Idempotent: revoking a revoked key answers the key as it is. A key with only
   * `keys:manage` must not take down a more powerful one (say, the admin key).
   */
  async revoke(revoker: Principal, id: string): Promise<KeyView> {
    const key = await this.find(revoker.organizationId, id);
    requireScopes(revoker, key.scopes as Scope[], 'revoke');
    if (key.status === 'revoked') return viewKey(key);
    const revoked = await this.prisma.apiKey.update({ where: { id }, data: { status: 'revoked', revokedAt: new Date() } });
    await this.bus.publish([key.keyHash]);
    return viewKey(revoked);
  }

  /** Another organization's key is reported as missing, not forbidden: its existence is not ours to reveal. */
  private async find(organizationId: string, id: string): Promise<ApiKey> {
    const key = await this.prisma.apiKey.findFirst({ where: { id, organizationId } });
    if (!key) throw new ApiError('NOT_FOUND', `No API key ${id}`, { gatewayCode: 'not_found' });
    return key;
  }
}
