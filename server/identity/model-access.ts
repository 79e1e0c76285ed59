// Which models an API key may call: its allow-list of model ids and families, each entry a
// pattern where `*` stands for any run of characters. `gpt-4o*` names models by id;
// `anthropic/*` names a family's models (the catalog's families: openai, anthropic, google,
// open source, local), and `anthropic/claude-*` the family's models whose id matches. An
// empty list allows every model. Routing (server/gateway/routing.ts) plans only allowed
// models, fallbacks included, and refuses a request none of whose models is allowed (403).

/** What a pattern is matched against: a catalog model's id and family. */
export interface NamedModel {
  id: string;
  family: string;
}

/** At most this many patterns per key, each at most MAX_PATTERN_LENGTH characters. */
export const MAX_PATTERNS = 100;
export const MAX_PATTERN_LENGTH = 100;
const PATTERN = /^[A-Za-z0-9._:* -]+(\/[A-Za-z0-9._:* -]+)?$/;

/** Why a list of patterns cannot be an allow-list (null: it can). */
export function patternProblem(patterns: readonly string[]): string | null {
  if (patterns.length > MAX_PATTERNS) return `at most ${MAX_PATTERNS} patterns`;
  const bad = patterns.find((p) => p.length > MAX_PATTERN_LENGTH || !PATTERN.test(p));
  return bad === undefined ? null : `"${bad}" is not a model pattern (a model id or family/model id, with * for any characters)`;
}

function compile(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

export class ModelAccess {
  private readonly matchers: { family: RegExp | null; id: RegExp }[];

  constructor(readonly patterns: readonly string[]) {
    this.matchers = patterns.map((pattern) => {
      const slash = pattern.indexOf('/');
      return slash < 0 ? { family: null, id: compile(pattern) } : { family: compile(pattern.slice(0, slash)), id: compile(pattern.slice(slash + 1)) };
    });
  }

  /** null for an empty list: every model is allowed, and nothing needs checking. */
  static of(patterns: readonly string[]): ModelAccess | null {
    return patterns.length === 0 ? null : new ModelAccess(patterns);
  }

  allows(model: NamedModel): boolean {
    return this.matchers.some((m) => (m.family === null || m.family.test(model.family)) && m.id.test(model.id));
  }
}
