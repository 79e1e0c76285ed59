// Continuing an assistant prefix (stream resume), as the adapters share it: an upstream
// that answers a prefixed request with 400 refuses the prefix (the gateway then tries the
// next deployment), and Anthropic's rule against a prefill ending in whitespace.
import { ProviderError, type ChatRequest } from './types.js';

/** A 400 to a request carrying a prefix is the upstream refusing the prefix. */
export function prefixRefused(err: unknown, request: ChatRequest): unknown {
  if (request.assistantPrefix !== undefined && err instanceof ProviderError && err.kind === 'bad_request') {
    return new ProviderError('prefix_refused', `upstream refused the assistant prefix: ${err.message}`, { ...err.details, cause: err });
  }
  return err;
}

export function cannotContinue(): ProviderError {
  return new ProviderError('prefix_refused', 'this deployment is configured not to continue an assistant prefix (prefix: none)');
}

/**
 * A prefix sent without its trailing whitespace (Anthropic answers 400 to it). The
 * continuation then starts with that whitespace again; `take` drops it from the first
 * pieces of the continuation, since the client already has it.
 */
export class TrimmedPrefix {
  readonly sent: string;
  private pending: string;

  constructor(text: string) {
    this.sent = text.trimEnd();
    this.pending = text.slice(this.sent.length);
  }

  /** One piece of the continuation, without the whitespace the prefix already ended with. */
  take(piece: string): string {
    if (this.pending === '') return piece;
    let i = 0;
    while (i < piece.length && i < this.pending.length && piece[i] === this.pending[i]) i++;
    this.pending = i === piece.length ? this.pending.slice(i) : '';
    return piece.slice(i);
  }
}
