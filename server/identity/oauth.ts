// Deprecated OAuth 2.0 client credentials (spec 5.3, sunset December 2026): a client id
// and secret buy a one-hour bearer token that works wherever an API key does and dies
// with its client.
import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Scope } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';
import { hashSecret, sameDigest } from './credentials.js';
import type { RevocationBus } from './revocation.js';

export const OAUTH_TOKEN_PREFIX = 'oat_';
export const OAUTH_TOKEN_TTL_SECONDS = 3600;

export interface OAuthClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface AccessToken {
  access_token: string;
  expires_in: number;
  token_type: 'Bearer';
}

/** RFC 6749 5.2: a 401 of the token endpoint says how to authenticate. */
export const invalidClient = (message = 'Client authentication failed') =>
  new ApiError('UNAUTHORIZED', message, { gatewayCode: 'invalid_client', headers: { 'WWW-Authenticate': 'Basic realm="oauth2"' } });

/** How many clients this process remembers having warned about the deprecation. */
const WARNED_CLIENTS_MAX = 10_000;

export class OAuthService {
  private readonly warned = new LRUCache<string, true>({ max: WARNED_CLIENTS_MAX });

  constructor(
    private readonly prisma: PrismaClient,
    private readonly bus: RevocationBus,
  ) {}

  async createClient(organizationId: string, scopes: Scope[]): Promise<OAuthClientCredentials> {
    const clientId = `oc_${randomBytes(12).toString('hex')}`;
    const clientSecret = `ocs_${randomBytes(32).toString('base64url')}`;
    await this.prisma.oAuthClient.create({ data: { organizationId, clientId, secretHash: hashSecret(clientSecret), scopes } });
    return { clientId, clientSecret };
  }

  async issueToken(credentials: OAuthClientCredentials): Promise<AccessToken> {
    const client = await this.prisma.oAuthClient.findUnique({ where: { clientId: credentials.clientId } });
    const hash = hashSecret(credentials.clientSecret);
    if (!client || !sameDigest(client.secretHash, hash) || client.status !== 'active') throw invalidClient();
    const token = `${OAUTH_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const now = Date.now();
    await this.prisma.$transaction([
      // Expired tokens of this client are of no use to anyone.
      this.prisma.oAuthAccessToken.deleteMany({ where: { clientId: client.id, expiresAt: { lt: new Date(now) } } }),
      this.prisma.oAuthAccessToken.create({
        data: { clientId: client.id, tokenHash: hashSecret(token), expiresAt: new Date(now + OAUTH_TOKEN_TTL_SECONDS * 1000) },
      }),
    ]);
    return { access_token: token, expires_in: OAUTH_TOKEN_TTL_SECONDS, token_type: 'Bearer' };
  }

  /**
   * True the first time this process sees `clientId` get a token: the deprecation warning
   * is logged once per client, not once per token request.
   */
  firstTokenOf(clientId: string): boolean {
    if (this.warned.has(clientId)) return false;
    this.warned.set(clientId, true);
    return true;
  }

  /** Revokes the client and every token it was issued. */
  async revokeClient(clientId: string): Promise<boolean> {
    const client = await this.prisma.oAuthClient.findUnique({ where: { clientId }, include: { tokens: true } });
    if (!client) return false;
    await this.prisma.$transaction([
      this.prisma.oAuthClient.update({ where: { id: client.id }, data: { status: 'revoked', revokedAt: new Date() } }),
      this.prisma.oAuthAccessToken.deleteMany({ where: { clientId: client.id } }),
    ]);
    if (client.tokens.length > 0) await this.bus.publish(client.tokens.map((t) => t.tokenHash));
    return true;
  }
}
