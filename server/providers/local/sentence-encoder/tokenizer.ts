// The sentence encoder's tokenizer: a unigram vocabulary of word pieces (SentencePiece-style,
// words marked by a leading "▁"), segmented by Viterbi for the highest total score. It gives
// exactly the ids of @energetic-ai/embeddings' own tokenizer (a test holds it to that on real
// documents), quirks included, in time linear in the text: that one copies the rest of the
// text at every character, ~6 ms of the ~70 ms a 1,000-character passage costs in all.

/** A piece and its log-probability, as the model's vocab.json lists them. */
export type Vocabulary = [piece: string, score: number][];

const WORD_START = '\u2581';
/** Ids 0-5 are the unknown piece, <s>, </s> and three extra tokens: never matched in text. */
const RESERVED = 6;
const UNKNOWN = 0;

interface TrieNode {
  children: Map<string, TrieNode>;
  /** The piece ending here, if one does. */
  id?: number;
  score?: number;
}

export class Tokenizer {
  private readonly root: TrieNode = { children: new Map() };

  constructor(private readonly vocabulary: Vocabulary) {
    for (let id = RESERVED; id < vocabulary.length; id++) {
      const [piece, score] = vocabulary[id];
      let node = this.root;
      for (const symbol of piece) {
        let child = node.children.get(symbol);
        if (!child) node.children.set(symbol, (child = { children: new Map() }));
        node = child;
      }
      // A piece listed twice keeps its last id and score, as the package's trie does.
      if (node !== this.root) Object.assign(node, { id, score });
    }
  }

  encode(text: string): number[] {
    const normalized = text.normalize('NFKC');
    const symbols = normalized.length > 0 ? Array.from(WORD_START + normalized.replaceAll(' ', WORD_START)) : [];
    const n = symbols.length;
    // best[e]: score of the best segmentation of symbols[0, e); 0 also means "none yet", so a
    // path scoring exactly 0 is replaced by the next candidate, as in the package.
    const best = new Float64Array(n + 1);
    const last = new Int32Array(n + 1);
    for (let start = 0; start < n; start++) {
      // Candidates reach each end in order of their start, ties to the later one: the package's order.
      const relax = (end: number, id: number, score: number) => {
        const total = score + best[start];
        if (best[end] === 0 || total >= best[end]) {
          best[end] = total;
          last[end] = id;
        }
      };
      let matched = false;
      let node = this.root.children.get(symbols[start]);
      for (let end = start + 1; node; end++) {
        if (node.id !== undefined) {
          relax(end, node.id, node.score!);
          matched = true;
        }
        node = end < n ? node.children.get(symbols[end]) : undefined;
      }
      if (!matched) relax(start + 1, UNKNOWN, 0);
    }
    // Back from the end, one piece at a time; the step is the piece's length in UTF-16 units,
    // as the package takes it (which differs from its symbols only for characters beyond the BMP).
    const ids: number[] = [];
    for (let end = n; end > 0; end -= this.vocabulary[last[end]][0].length) ids.push(last[end]);
    // A run of unknown pieces is one unknown token.
    const merged = ids.filter((id, i) => !(id === UNKNOWN && i > 0 && ids[i - 1] === UNKNOWN));
    return merged.reverse();
  }
}
