// Guardrails of the guarded routes: input checks that hard-block a request (403
// GUARDRAIL_BLOCKED) and output moderation that ends an answer with `content_filter`.
// A check is one small interface; the default is a local rule set (README "Guardrails"),
// and an OpenAI-compatible moderation endpoint can be configured beside it
// (moderation.ts). Direct mode (v1) skips them.
import { ApiError } from '../errors.js';
import type { ChatMessage } from '../providers/types.js';

export type Verdict = { blocked: false } | { blocked: true; category: string };

export interface GuardrailCheck {
  readonly id: string;
  /** `local` checks are cheap enough for every streamed chunk; `remote` ones run per sentence. */
  readonly cost: 'local' | 'remote';
  check(text: string, signal: AbortSignal): Promise<Verdict>;
}

/** Local rules: categories of requests the platform refuses outright, matched on the text. */
export const DEFAULT_RULES: Readonly<Record<string, RegExp>> = {
  // Making one, in a question or in an answer ("to make a nerve agent, mix …").
  weapons_of_mass_harm: /\b(make|making|build|building|synthesi[sz]e|synthesi[sz]ing|produce|producing|manufactur\w*|recipe for|instructions for)\b.{0,40}\b(nerve agents?|sarin|vx gas|bioweapons?|anthrax spores|pipe bombs?|dirty bombs?|nuclear (bombs?|weapons?))\b/i,
  self_harm_instructions: /\b(best|easiest|painless|quickest) (way|method)s? to (kill myself|end my life|commit suicide)\b/i,
  child_sexual_content: /\b(sexual|explicit|nude)\b.{0,30}\b(child|minor|under-?age|kid)s?\b|\b(child|minor|under-?age)s?\b.{0,30}\b(sexual|explicit|nude)\b/i,
};

export class RuleCheck implements GuardrailCheck {
  readonly id = 'local-rules';
  readonly cost = 'local';
  constructor(private readonly rules: Readonly<Record<string, RegExp>> = DEFAULT_RULES) {}

  async check(text: string): Promise<Verdict> {
    for (const [category, rule] of Object.entries(this.rules)) if (rule.test(text)) return { blocked: true, category };
    return { blocked: false };
  }
}

/** How much recent text a local check sees per chunk (a rule match spans well under this). */
const LOCAL_WINDOW = 600;
/** A remote check runs on each finished sentence, or on this much text without one. */
const REMOTE_CHUNK = 400;

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

  /** Whether a whole answer must be withheld with `content_filter`. */
  async blocksOutput(text: string, signal: AbortSignal): Promise<boolean> {
    for (const check of this.output) if ((await check.check(text, signal)).blocked) return true;
    return false;
  }

  /**
   * Moderation of a streamed answer. `push` takes each chunk and returns the text that may
   * be sent now, or null when the answer must stop here. Local checks see a window of
   * recent text on every chunk. Text waits for remote checks: it is released a finished
   * sentence at a time once they clear it, so flagged words never reach the client.
   * `flush` checks and releases what is still held when the answer ends.
   */
  monitor(signal: AbortSignal): { push(chunk: string): Promise<string | null>; flush(): Promise<string | null> } {
    const local = this.output.filter((c) => c.cost === 'local');
    const remote = this.output.filter((c) => c.cost === 'remote');
    let text = '';
    let held = '';
    const release = async (): Promise<string | null> => {
      const sentence = held;
      held = '';
      for (const check of remote) if ((await check.check(sentence, signal)).blocked) return null;
      return sentence;
    };
    return {
      push: async (chunk) => {
        text += chunk;
        for (const check of local) if ((await check.check(text.slice(-LOCAL_WINDOW), signal)).blocked) return null;
        if (remote.length === 0) return chunk;
        held += chunk;
        return /[.!?]\s*$|\n/.test(held) || held.length >= REMOTE_CHUNK ? release() : '';
      },
      flush: async () => (held === '' ? '' : release()),
    };
  }
}
