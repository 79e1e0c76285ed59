import type { Scope } from '../../generated/contract/routes.js';
import type { ModelAccess } from './model-access.js';

/** Who is calling: resolved from an API key or a (deprecated) OAuth access token. */
export interface Principal {
  kind: 'api_key' | 'oauth_token';
  /** The API key id, or the OAuth client id. */
  credentialId: string;
  organizationId: string;
  scopes: readonly Scope[];
  /** When the credential stops working (ms since the epoch), if it expires. */
  expiresAt: number | null;
  /** The models the key may call; null or absent: every model. */
  models?: ModelAccess | null;
  /** The key has a weekly cap or a credit share: its requests hold on its own pool too (billing). */
  spendLimited?: boolean;
}
