// Upstream error text can echo the credential it was sent ("Incorrect API key provided:
// Bearer sk-…"). Such text is logged and can reach a caller (a refused prefix's message),
// so every upstream error message is redacted where it becomes a ProviderError: the
// provider's configured keys themselves, and anything shaped like a credential.

// A token's characters; a dot only inside it (JWTs), not the full stop after it.
const TOKEN = String.raw`[\w~+/=*-]+(?:\.[\w~+/=*-]+)*`;
const CREDENTIAL = new RegExp(String.raw`\b(bearer\s+)${TOKEN}|\b(?:sk|rk|pk|gsk|xai)[-_](?=[\w.*-]{6})${TOKEN}|\bAIza[\w-]{20,}`, 'gi');

export const REDACTED = '[redacted]';

export class Redactor {
  private readonly secrets: string[];

  /** `secrets`: the provider's keys (short or absent ones are skipped: they would redact ordinary words). */
  constructor(secrets: readonly (string | undefined)[] = []) {
    this.secrets = secrets.filter((s): s is string => s !== undefined && s.length >= 8);
  }

  text(value: string): string {
    let out = value;
    for (const secret of this.secrets) out = out.replaceAll(secret, REDACTED);
    return out.replace(CREDENTIAL, (_match, bearer: string | undefined) => (bearer ? `${bearer}${REDACTED}` : REDACTED));
  }
}
