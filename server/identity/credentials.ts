// API key material. A key is `sk_` + a 16-character lookup id + 256 random bits. Only the
// lookup id (not secret) is used to find the record; the SHA-256 of the whole key is then
// compared in constant time, so response timing reveals nothing about the secret part.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const KEY_PREFIX = 'sk_';
const LOOKUP_ID_LENGTH = 16; // 12 bytes, base64url
const SECRET_LENGTH = 43; // 32 bytes, base64url
const KEY_SHAPE = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{${LOOKUP_ID_LENGTH + SECRET_LENGTH}}$`);

export interface NewApiKey {
  /** Shown to the caller once, never stored. */
  plaintext: string;
  lookupId: string;
  hash: string;
  /** Safe to display: prefix and the last four characters. */
  display: string;
}

export function newApiKey(): NewApiKey {
  const lookupId = randomBytes(12).toString('base64url');
  const plaintext = `${KEY_PREFIX}${lookupId}${randomBytes(32).toString('base64url')}`;
  return { plaintext, lookupId, hash: hashSecret(plaintext), display: obfuscate(plaintext) };
}

/** The lookup id of something shaped like an API key, else null. */
export function lookupIdOf(token: string): string | null {
  return KEY_SHAPE.test(token) ? token.slice(KEY_PREFIX.length, KEY_PREFIX.length + LOOKUP_ID_LENGTH) : null;
}

export function hashSecret(secret: string): string {
  // One-shot: no Hash object per request.
  return hash('sha256', secret, 'hex');
}

export function obfuscate(secret: string): string {
  const prefix = secret.startsWith(KEY_PREFIX) ? KEY_PREFIX : '';
  return `${prefix}…${secret.slice(-4)}`;
}

/** Compares two hex digests without leaking where they differ. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}
