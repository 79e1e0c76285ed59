// An external moderation check: an OpenAI-compatible `/moderations` endpoint (OpenAI's
// omni-moderation, or a self-hosted compatible service) as a guardrail beside the local rules.
import type { Logger } from 'pino';
import { createHttpClient, type HttpClient } from '../providers/http-client.js';
import { Redactor } from '../providers/redact.js';
import type { GuardrailCheck, Verdict } from './guardrails.js';

export interface ModerationOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** When the moderation service cannot answer: let the text through (logged) or block it. */
  onError: 'allow' | 'block';
  timeoutMs: number;
  logger: Logger;
}

interface ModerationAnswer {
  results?: { flagged?: boolean; categories?: Record<string, boolean> }[];
}

export class ModerationCheck implements GuardrailCheck {
  readonly id = 'moderation';
  readonly cost = 'remote';
  private readonly http: HttpClient;

  constructor(private readonly options: ModerationOptions) {
    this.http = createHttpClient(options.baseUrl, new Redactor([options.apiKey]));
  }

  async check(text: string, signal: AbortSignal): Promise<Verdict> {
    if (text.trim() === '') return { blocked: false };
    const { timeoutMs } = this.options;
    try {
      const answer = await this.http.json<ModerationAnswer>(
        {
          method: 'POST',
          path: '/moderations',
          headers: this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {},
          body: { model: this.options.model, input: text },
        },
        { signal, timeouts: { connectMs: timeoutMs, firstTokenMs: timeoutMs, idleMs: timeoutMs } },
        { ms: timeoutMs, kind: 'first_token' },
      );
      const result = answer.results?.[0];
      if (!result?.flagged) return { blocked: false };
      return { blocked: true, category: Object.entries(result.categories ?? {}).find(([, on]) => on)?.[0] ?? 'flagged' };
    } catch (error) {
      if (signal.aborted) throw error;
      this.options.logger.warn({ err: (error as Error).message, onError: this.options.onError }, 'moderation service failed');
      return this.options.onError === 'block' ? { blocked: true, category: 'moderation_unavailable' } : { blocked: false };
    }
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
