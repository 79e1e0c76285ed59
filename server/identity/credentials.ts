// API key material: generated with 256 bits of randomness, stored only as a SHA-256 hash,
// displayed only in obfuscated form.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const KEY_PREFIX = 'sk_';

export interface NewSecret {
  /** Shown to the caller once, never stored. */
  plaintext: string;
  hash: string;
  /** Safe to display: prefix and the last four characters. */
  display: string;
}

export function newApiKey(): NewSecret {
  const plaintext = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { plaintext, hash: hashSecret(plaintext), display: obfuscate(plaintext) };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
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
