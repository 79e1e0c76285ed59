// Real text for the local embedding model's tests and benchmark: passages of about 1,000
// characters cut at word boundaries from the Python 3.11 documentation sources of the retrieval
// corpus (test/fixtures/retrieval/corpus/python), always the same ones.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const DIRECTORY = join(import.meta.dirname, '../fixtures/retrieval/corpus/python');

export function realPassages(count: number, characters = 1_000): string[] {
  const passages: string[] = [];
  for (const file of readdirSync(DIRECTORY).sort()) {
    const words = readFileSync(join(DIRECTORY, file), 'utf8').split(/\s+/).filter(Boolean);
    let passage = '';
    for (const word of words) {
      if (passage.length + word.length + 1 > characters) {
        passages.push(passage);
        if (passages.length === count) return passages;
        passage = '';
      }
      passage = passage ? `${passage} ${word}` : word;
    }
  }
  throw new Error(`the corpus holds fewer than ${count} passages of ${characters} characters`);
}
