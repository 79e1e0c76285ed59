// Guardrails of the guarded routes: input checks that hard-block a request (403
// GUARDRAIL_BLOCKED) and output moderation that ends an answer with `content_filter`.
// A check is pluggable; the default is a local rule set (README "Guardrails"), and an
// external moderation endpoint can be added in the gateway config. Direct mode (v1) skips them.
import { ApiError } from '../errors.js';
import type { ChatMessage } from '../providers/types.js';

export type Verdict = { blocked: false } | { blocked: true; category: string };

export interface GuardrailCheck {
  readonly id: string;
  check(text: string, signal: AbortSignal): Promise<Verdict>;
}

/** Local rules: categories of requests the platform refuses outright, matched on the text. */
export const DEFAULT_RULES: Readonly<Record<string, RegExp>> = {
  weapons_of_mass_harm: /\b(how (do i|to|can i) (make|build|synthesi[sz]e|produce)|instructions for (making|building)|recipe for)\b.{0,40}\b(nerve agent|sarin|vx gas|bioweapon|anthrax spores|pipe bomb|dirty bomb|nuclear (bomb|weapon))/i,
  self_harm_instructions: /\b(best|easiest|painless|quickest) (way|method)s? to (kill myself|end my life|commit suicide)\b/i,
  child_sexual_content: /\b(sexual|explicit|nude)\b.{0,30}\b(child|minor|under-?age|kid)s?\b|\b(child|minor|under-?age)s?\b.{0,30}\b(sexual|explicit|nude)\b/i,
};

export class RuleCheck implements GuardrailCheck {
  readonly id = 'local-rules';
  constructor(private readonly rules: Readonly<Record<string, RegExp>> = DEFAULT_RULES) {}

  async check(text: string): Promise<Verdict> {
    for (const [category, rule] of Object.entries(this.rules)) if (rule.test(text)) return { blocked: true, category };
    return { blocked: false };
  }
}

export class Guardrails {
  constructor(
    private readonly input: GuardrailCheck[],
    private readonly output: GuardrailCheck[],
  ) {}

  /** Throws 403 GUARDRAIL_BLOCKED when any input check blocks the user's messages. */
  async checkInput(messages: ChatMessage[], signal: AbortSignal): Promise<void> {
    const text = messages
      .filter((m) => m.role === 'user')
      .map((m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join(' ')))
      .join('\n');
    for (const check of this.input) {
      const verdict = await check.check(text, signal);
      if (verdict.blocked) throw new ApiError('GUARDRAIL_BLOCKED', `The request was blocked by a safety guardrail (${verdict.category}).`);
    }
  }

  /** Whether an answer (so far) must be cut off with `content_filter`. */
  async blocksOutput(text: string, signal: AbortSignal): Promise<boolean> {
    for (const check of this.output) if ((await check.check(text, signal)).blocked) return true;
    return false;
  }
}
