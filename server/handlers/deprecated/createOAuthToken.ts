// Deprecated OAuth 2.0 client credentials grant (RFC 6749 4.4), credentials as HTTP Basic
// or as form fields. The router adds the Deprecation and Sunset headers.
import { ApiError } from '../../errors.js';
import type { AppHandler } from '../../http/handler.js';
import { invalidClient } from '../../identity/oauth.js';
import { logSafe } from '../../logging.js';

function basicCredentials(header: string | undefined): { clientId: string; clientSecret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  // RFC 6749 2.3.1: both parts are form-urlencoded before encoding.
  try {
    return { clientId: decodeURIComponent(decoded.slice(0, colon)), clientSecret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    throw invalidClient('Malformed client credentials');
  }
}

export const createOAuthToken = (async ({ body, headers }, ctx) => {
  if (body.grant_type !== 'client_credentials') {
    throw new ApiError('INVALID_REQUEST', `Unsupported grant_type "${logSafe(body.grant_type)}": use client_credentials`, {
      gatewayCode: 'unsupported_grant_type',
    });
  }
  const credentials =
    basicCredentials(headers.authorization) ??
    (body.client_id && body.client_secret ? { clientId: body.client_id, clientSecret: body.client_secret } : null);
  if (!credentials) {
    throw new ApiError('INVALID_REQUEST', 'Client credentials are required, as HTTP Basic or as client_id and client_secret', {
      gatewayCode: 'invalid_request',
    });
  }
  // PostgreSQL text cannot hold NUL: such a credential can match no client, and must not reach a query.
  if (credentials.clientId.includes('\0') || credentials.clientSecret.includes('\0')) {
    throw new ApiError('INVALID_REQUEST', 'Client credentials must not contain NUL characters', { gatewayCode: 'invalid_request' });
  }
  const { oauth } = ctx.services.identity;
  const token = await oauth.issueToken(credentials);
  // Only a client that really authenticated, once: a failed attempt is the request line alone.
  if (oauth.firstTokenOf(credentials.clientId)) {
    ctx.log.warn({ clientId: logSafe(credentials.clientId) }, 'deprecated OAuth client credentials used: migrate to API keys');
  }
  return { status: 200, body: token, headers: { 'Cache-Control': 'no-store' } };
}) satisfies AppHandler<'createOAuthToken'>;
