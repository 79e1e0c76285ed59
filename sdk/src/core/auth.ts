// Credentials: an API key, or (deprecated) OAuth 2.0 client credentials whose access token
// is fetched once, cached, shared by concurrent requests and refreshed before it expires.

/** @deprecated OAuth 2.0 client credentials are sunset by December 2026: use an API key. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface AccessToken {
  access_token: string;
  /** Lifetime in seconds. */
  expires_in: number;
}

/** Refresh this long before expiry (at most a tenth of the token's lifetime). */
const REFRESH_MARGIN_MS = 60_000;

export class TokenCache {
  #token: { value: string; expiresAt: number } | undefined;
  #pending: Promise<string> | undefined;
  readonly #fetchToken: () => Promise<AccessToken>;

  constructor(fetchToken: () => Promise<AccessToken>) {
    this.#fetchToken = fetchToken;
  }

  /** A valid token: the cached one, or one fetched now (once, however many callers wait). */
  get(): Promise<string> {
    const token = this.#token;
    if (token && Date.now() < token.expiresAt) return Promise.resolve(token.value);
    this.#pending ??= this.#fetchToken()
      .then(({ access_token, expires_in }) => {
        const lifetime = Math.max(0, expires_in * 1000);
        this.#token = { value: access_token, expiresAt: Date.now() + lifetime - Math.min(REFRESH_MARGIN_MS, lifetime / 10) };
        return access_token;
      })
      .finally(() => {
        this.#pending = undefined;
      });
    return this.#pending;
  }

  /**
   * After a 401 of the token `sent`: forgets it if it is still the cached one (never a
   * newer token another request fetched meanwhile). True when a retry can get a fresh
   * token: `sent` was the cached one, a fetch is in flight, or a newer one is cached. So
   * however many concurrent requests fail with the revoked token, it is fetched once.
   */
  invalidate(sent: string | undefined): boolean {
    if (this.#pending) return true;
    const token = this.#token;
    if (!token) return false;
    if (token.value === sent) this.#token = undefined;
    return true;
  }
}
