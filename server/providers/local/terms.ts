// Term extraction shared by the rule-based responder (relevance by overlap) and the hashing
// embedder: lower-cased words, function words dropped, a crude plural/verb-suffix stem so
// "passages" meets "passage" and "running" meets "run".

const STOPWORDS = new Set(
  ('a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being ' +
    'am do does did doing have has had having i me my we our you your he him his she her it its they them their this that ' +
    'these those there here what which who whom whose when where why how not no nor so than too very can could will would ' +
    'shall should may might must just also please tell give show me any some all each more most other such only own same ' +
    'up down out over under again further once let s t d ll m re ve')
    .split(' '),
);

export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Stemmed words that carry meaning, in order (repeats kept for term frequency). */
export function contentTerms(text: string): string[] {
  return words(text)
    .filter((word) => !STOPWORDS.has(word))
    .map(stem);
}
