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
  /**
   * A local check may watch a streamed answer itself: the returned function is called on
   * every chunk with the window of recent text (the chunk at its end) and the chunk's
   * length, and must decide as `check(window)` would. Without it, `check` runs per chunk.
   */
  watch?(): (window: string, added: number) => Verdict;
}

// The local rules block a request for (or an answer giving) the means of grave harm: an
// intent (how do I…, how to…, instructions for…, a recipe for…, an imperative) and the
// harmful object in one phrase. A harmful word alone is not enough: history, policy,
// safety and education questions about the same subjects pass (test/gateway/guardrails.test.ts
// holds the sentences that must pass and those that must block).

/** Producing something. */
const MAKE = String.raw`(?:make|making|build|building|synthesi[sz]e|synthesi[sz]ing|produce|producing|manufactur(?:e|ing)|assembl(?:e|ing)|cook|cooking|brew|brewing|weaponi[sz]e|weaponi[sz]ing|create|creating|prepare|preparing|extract|extracting|culture|culturing)`;
/** Only these words may stand between the verb and the object ("make a working pipe bomb"). */
const FILLER = String.raw`(?:(?:a|an|the|some|my|your|our|own|homemade|home-made|simple|small|large|working|functional|crude|real|deadly|lethal|powerful|improvised|batch(?:es)? of|quantit(?:y|ies) of|(?:kilo)?grams? of|lit(?:er|re)s? of)\s+)*`;
const WEAPON = String.raw`(?:nerve agents?|sarin|soman|tabun|vx(?: gas| nerve agent)?|novichok|ricin|mustard gas|bio-?weapons?|biological weapons?|chemical weapons?|anthrax(?: spores)?|pipe bombs?|dirty bombs?|nail bombs?|improvised explosive devices?|ieds?|(?:nuclear|atomic) (?:bombs?|weapons?|warheads?|devices?))\b`;
const ASKER = String.raw`(?:i|we|you|one|someone|somebody|anyone|a person)`;
const WANTS = String.raw`(?:please|help me|teach me(?: how)?(?: to)?|show me how to|walk me through|tell me how to|i want to|i need to|i'd like to|i plan to|i'm going to|let's|lets)`;
/** The first step of an instruction, after "To make X, …". */
const STEP = String.raw`(?:first\s+)?(?:you\s+(?:need|must|should|will|can)\b|mix|combine|take|add|heat|dissolve|get|obtain|buy|start|begin|place|pour|react|distil+|fill|attach|connect|pack)`;

const weapons = new RegExp(
  [
    String.raw`\bhow (?:do|can|could|would|should|might|will) ${ASKER} (?:\w+ly |go about |start )?${MAKE}\s+${FILLER}${WEAPON}`,
    String.raw`\bhow to (?:\w+ly )?${MAKE}\s+${FILLER}${WEAPON}`,
    String.raw`\b(?:recipes?|formulas?|blueprints?|schematics?) (?:for|of|to make)\s+${FILLER}${WEAPON}`,
    String.raw`\b(?:instructions?|steps?|guide|tutorial|directions|procedure|walkthrough) (?:for|to|on|about) (?:how to )?${MAKE}\s+${FILLER}${WEAPON}`,
    String.raw`(?:^|[.!?:]\s+|\b${WANTS}\s+)${MAKE}\s+${FILLER}${WEAPON}`,
    String.raw`(?:^|[.!?:]\s+)to ${MAKE}\s+${FILLER}${WEAPON}[^.?!;\n]{0,40},\s*${STEP}`,
  ].join('|'),
  'im',
);

const MINOR = String.raw`(?:child(?:ren)?|kids?|minors?|under-?aged?|pre-?teens?|toddlers?|\d{1,2}[- ]?(?:years?[- ]old|yo)s?|(?:young|little) (?:girls?|boys?)|school ?(?:girls?|boys?))\b`;
const SEXUAL = String.raw`(?:sexual(?:ly explicit)?|erotic|nude|naked|porn(?:ographic)?|lewd|explicit sex(?:ual)?|sex) (?:stor(?:y|ies)|scenes?|role-?play|images?|pictures?|photos?|videos?|content|fantas(?:y|ies)|descriptions?|chat|fiction|material)`;
const PRODUCE = String.raw`(?:write|generate|create|make|draw|produce|describe|show|send|give|find|share|role-?play|imagine|continue|tell|do|have|start|here's|here is)`;

const childSexual = new RegExp(
  [
    String.raw`\b${PRODUCE}(?: me| us)?(?: an?| some| the| more| another)?(?: \w+)? ${SEXUAL}(?: \w+){0,3}? (?:about|of|with|involving|featuring|depicting|starring)(?: \w+){0,2}? ${MINOR}`,
    String.raw`\b(?:find|download|send|share|show|give|get|buy)(?: me)?(?: some)? (?:child|kiddie|under-?age|minor) porn`,
  ].join('|'),
  'i',
);

/**
 * A category's pattern, and what any match of it must contain: a plain alternation that
 * rules out most text several times faster than the pattern.
 */
export interface Rule {
  pattern: RegExp;
  needs?: RegExp;
  /**
   * The most characters a match of `needs` reaches, lookarounds included. With it a streamed
   * answer looks for `needs` in each new chunk and this many characters before it, and runs
   * `pattern` over its window only while a match of `needs` is in that window; without it,
   * `needs` is tested on the whole window on every chunk.
   */
  needsSpan?: number;
}

/** Local rules: categories of requests (and answers) the platform refuses outright. */
export const DEFAULT_RULES: Readonly<Record<string, Rule>> = {
  // The longest match of these `needs` is 28 characters ("improvised explosive devices").
  weapons_of_mass_harm: { pattern: weapons, needs: new RegExp(WEAPON, 'i'), needsSpan: 64 },
  self_harm_instructions: {
    pattern: /\b(best|easiest|painless|quickest) (way|method)s? to (kill myself|end my life|commit suicide)\b/i,
    needs: /kill myself|end my life|commit suicide/i,
    needsSpan: 64,
  },
  child_sexual_content: { pattern: childSexual, needs: new RegExp(`${MINOR}|porn`, 'i'), needsSpan: 64 },
};

interface CompiledRule {
  category: string;
  pattern: RegExp;
  needs?: RegExp;
  /** When the span of `needs` is known: `needs` with the g flag (where its last match in new text ends), and the span. */
  scan?: { all: RegExp; span: number };
}

/** `regex` without its g and y flags (its `test` then keeps no state between calls), plus `extra`. */
const withFlags = (regex: RegExp, extra = '') =>
  regex.global || regex.sticky || extra ? new RegExp(regex.source, regex.flags.replace(/[gy]/g, '') + extra) : regex;

export class RuleCheck implements GuardrailCheck {
  readonly id = 'local-rules';
  readonly cost = 'local';
  private readonly rules: CompiledRule[];

  constructor(rules: Readonly<Record<string, Rule>> = DEFAULT_RULES) {
    this.rules = Object.entries(rules).map(([category, { pattern, needs, needsSpan }]) => ({
      category,
      pattern: withFlags(pattern),
      ...(needs && { needs: withFlags(needs) }),
      ...(needs && needsSpan !== undefined && { scan: { all: withFlags(needs, 'g'), span: needsSpan } }),
    }));
  }

  async check(text: string): Promise<Verdict> {
    for (const { category, pattern, needs } of this.rules) {
      if ((!needs || needs.test(text)) && pattern.test(text)) return { blocked: true, category };
    }
    return { blocked: false };
  }

  watch(): (window: string, added: number) => Verdict {
    let seen = 0;
    // Per rule: where (in the whole answer) the last match of `needs` ended.
    const needsEnd = this.rules.map(() => -Infinity);
    return (window, added) => {
      seen += added;
      let verdict: Verdict = { blocked: false };
      // Every rule reads every chunk, also after one blocks: each keeps its own place.
      for (const [i, { category, pattern, needs, scan }] of this.rules.entries()) {
        if (scan) {
          const end = lastMatchEnd(scan.all, window, Math.max(0, window.length - added - scan.span));
          if (end >= 0) needsEnd[i] = seen - window.length + end;
          // A match of `needs` that overlaps the one found starts before it ends (or at it,
          // when empty): both have left the window once the window starts past that end.
          if (seen - needsEnd[i] > window.length) continue;
        } else if (needs && !needs.test(window)) {
          continue;
        }
        if (!verdict.blocked && pattern.test(window)) verdict = { blocked: true, category };
      }
      return verdict;
    };
  }
}

/** Where the last match of a global `regex` in `text` from `from` ends, or -1. */
function lastMatchEnd(regex: RegExp, text: string, from: number): number {
  let end = -1;
  regex.lastIndex = from;
  for (let m = regex.exec(text); m; m = regex.exec(text)) {
    end = regex.lastIndex;
    // An empty match moves on by a whole character: inside a surrogate pair a u-flag regex
    // would step back to the pair and match there again.
    if (m[0] === '') regex.lastIndex += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  }
  return end;
}

/** How much recent text a local check sees per chunk (a rule match spans well under this). */
const LOCAL_WINDOW = 600;
/** A remote check runs on each finished sentence, or on this much text without one. */
const REMOTE_CHUNK = 400;

/** The output moderation of one streamed answer (Guardrails.monitor). */
export interface StreamModeration {
  push(chunk: string): Promise<string | null>;
  flush(): Promise<string | null>;
}

export class Guardrails {
  /** The output checks by how a stream runs them (sorted once, not per stream): watching, per chunk, per sentence. */
  private readonly watching: GuardrailCheck[];
  private readonly local: GuardrailCheck[];
  private readonly remote: GuardrailCheck[];

  constructor(
    private readonly input: GuardrailCheck[],
    private readonly output: GuardrailCheck[],
  ) {
    this.watching = output.filter((c) => c.cost === 'local' && c.watch);
    this.local = output.filter((c) => c.cost === 'local' && !c.watch);
    this.remote = output.filter((c) => c.cost === 'remote');
  }

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
  monitor(signal: AbortSignal): StreamModeration {
    const watchers = this.watching.map((c) => c.watch!());
    const { local, remote } = this;
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
        // Only the window is kept: a long answer costs neither memory nor a copy of all its text per chunk.
        text = (text + chunk).slice(-LOCAL_WINDOW);
        for (const watch of watchers) if (watch(text, chunk.length).blocked) return null;
        for (const check of local) if ((await check.check(text, signal)).blocked) return null;
        if (remote.length === 0) return chunk;
        held += chunk;
        return /[.!?]\s*$|\n/.test(held) || held.length >= REMOTE_CHUNK ? release() : '';
      },
      flush: async () => (held === '' ? '' : release()),
    };
  }
}
