// Authentication and scope checks, run before validation so an anonymous caller learns
// nothing about a body's shape.
import type { RequestHandler } from 'express';
import { routesById, type RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';
import type { Authenticator } from '../identity/authenticator.js';
import { deprecationHeaders } from './deprecation.js';

const BEARER = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i;

const OAUTH_DEPRECATION = deprecationHeaders(routesById.createOAuthToken);

export function authenticate(route: RouteDefinition, authenticator: Authenticator): RequestHandler {
  if (route.auth.scheme !== 'bearer') return (_req, _res, next) => next();
  // Spec 5.5: on search endpoints a malformed or invalid credential is a gateway 403.
  const rejectStatus = route.tag === 'search' ? 403 : 401;
  const reject = (message: string) =>
    rejectStatus === 403
      ? new ApiError('FORBIDDEN', message, { gatewayCode: 'forbidden' })
      : new ApiError('UNAUTHORIZED', message, { gatewayCode: 'unauthorized_invalid_credentials' });

  return async (req, res, next) => {
    const header = req.headers.authorization;
    if (header === undefined) {
      throw new ApiError('UNAUTHORIZED', 'Missing Authorization', { gatewayCode: 'unauthorized_missing_authorization' });
    }
    const token = BEARER.exec(header)?.[1];
    if (!token) throw reject('Malformed Authorization header: expected "Bearer <API_KEY>"');
    const principal = await authenticator.authenticate(token);
    if (!principal) throw reject('Invalid, expired or revoked credentials');
    const missing = route.auth.scopes.filter((scope) => !principal.scopes.includes(scope));
    if (missing.length > 0) {
      throw new ApiError('FORBIDDEN', `The API key lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`, {
        gatewayCode: 'forbidden',
      });
    }
    res.locals.principal = principal;
    // Callers still on OAuth tokens hear about the sunset on every request, not only at /oauth2/token.
    if (principal.kind === 'oauth_token') for (const [name, value] of OAUTH_DEPRECATION) res.setHeader(name, value);
    next();
  };
}
