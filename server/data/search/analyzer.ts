// The keyword leg's text analysis, shared by indexing and querying so both sides always agree
// (in JavaScript rather than PostgreSQL's text search configurations, which differ between
// installations and cannot keep identifiers whole).
//
// A technical text names things: `max_wal_senders`, `X-RateLimit-Remaining`,
// `functools.lru_cache`, `sqlite3_busy_timeout`, `ThreadPoolExecutor`. Such a token gives its
// whole form (lower-cased, unstemmed: an exact name is rare, so it weighs heavily) and its
// parts (stemmed, as ordinary words), so that `lru_cache`, `lru cache` and "caching" all meet
// it at the strength they deserve. Plain words are lower-cased, stop words dropped, and the
// rest stemmed (Porter), so "vacuuming" meets "vacuumed".
import { stemmer } from 'stemmer';

/** Words plus the joiners that hold an identifier together (`_` inside words, `. - : /` between them). */
const TOKEN = /[\p{L}\p{N}_]+(?:[.\-:/]+[\p{L}\p{N}_]+)*/gu;
/** Where an identifier comes apart: joiners, and a lower-case letter or digit followed by a capital. */
const PART_BOUNDARY = /[._\-:/]+|(?<=[\p{Ll}\p{N}])(?=\p{Lu})/u;
/** Longer tokens are noise (base64, hashes) and would bloat the index. */
const MAX_TOKEN = 64;

const STOP_WORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing down during each few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other ' +
    'our ours ourselves out over own same she should so some such than that the their theirs them themselves then there ' +
    'these they this those through to too under until up very was we were what when where which while who whom why will ' +
    'with would you your yours yourself yourselves s t d ll m re ve isn doesn don didn wasn aren weren hasn haven won wouldn shouldn couldn'
  ).split(' '),
);

const stem = (word: string) => (/^\p{N}/u.test(word) ? word : stemmer(word));

/**
 * The terms of a text in order, repeats kept (their count is the term frequency): each
 * plain word's stem, and for each identifier its whole form and then its parts' stems.
 */
export function analyze(text: string): string[] {
  const terms: string[] = [];
  for (const [raw] of text.normalize('NFKC').matchAll(TOKEN)) {
    const token = raw.replace(/^_+|_+$/g, '');
    if (!token || token.length > MAX_TOKEN) continue;
    const parts = token.split(PART_BOUNDARY).filter(Boolean);
    const lower = token.toLowerCase();
    if (parts.length > 1) terms.push(lower.replace(/[.\-:/]+$/, ''));
    for (const part of parts) {
      const word = part.toLowerCase();
      if (STOP_WORDS.has(word)) continue;
      terms.push(stem(word));
    }
  }
  return terms;
}

/** Term → frequency of a text's terms, and how many terms it has (its length for BM25). */
export interface TermStatistics {
  frequencies: Map<string, number>;
  length: number;
}

export function termFrequencies(text: string): TermStatistics {
  const frequencies = new Map<string, number>();
  const terms = analyze(text);
  for (const term of terms) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
  return { frequencies, length: terms.length };
}
