// The retrieval evaluation corpus (test/fixtures/retrieval): its documents as the manifest
// lists them, their text as the platform's own parsers extract it (cached in .data, since
// parsing 1,300 HTML pages takes a while), and the labelled queries.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from '../../server/data/ingestion/parse.js';

export const FIXTURES = fileURLToPath(new URL('../../test/fixtures/retrieval/', import.meta.url));
const TEXT_CACHE = fileURLToPath(new URL('../../.data/retrieval-text-cache.json', import.meta.url));

export interface CorpusDocument {
  /** `<folder>/<file>`: the document's id in judgments. */
  id: string;
  tenant: string;
  domain: string;
  file: string;
  package: string;
  version: string;
  license: string;
  source: string;
  bytes: number;
  sha256: string;
}

export type QueryKind = 'paraphrase' | 'identifier' | 'near-miss' | 'cross-tenant';

export interface LabelledQuery {
  id: string;
  /** The publisher the query is asked in. */
  tenant: string;
  kind: QueryKind;
  query: string;
  /** Document id → graded relevance: 2 answers it, 1 partly or as well. Empty for cross-tenant queries. */
  relevant: Record<string, number>;
  /** Near misses: lexically close documents that do not answer it. */
  wrong?: string[];
  /** Cross-tenant: the other tenant's documents that would answer it (none may be returned). */
  foreign?: string[];
  /** Where the answer is, in a few words (for whoever checks the judgment). */
  note?: string;
}

export function loadManifest(): CorpusDocument[] {
  return (JSON.parse(readFileSync(join(FIXTURES, 'manifest.json'), 'utf8')) as { documents: CorpusDocument[] }).documents;
}

export function documentPath(doc: CorpusDocument): string {
  return join(FIXTURES, 'corpus', doc.id);
}

/** Every query file under queries/. */
export function loadQueries(): LabelledQuery[] {
  const dir = join(FIXTURES, 'queries');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .flatMap((name) => (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { queries: LabelledQuery[] }).queries);
}

/** The text the platform extracts from each document (HTML parsed as ingestion parses it; text as is). */
export async function documentTexts(documents: CorpusDocument[]): Promise<Map<string, string>> {
  const cache: Record<string, string> = existsSync(TEXT_CACHE) ? JSON.parse(readFileSync(TEXT_CACHE, 'utf8')) : {};
  let added = 0;
  const texts = new Map<string, string>();
  for (const doc of documents) {
    const key = createHash('sha256').update(`${doc.sha256}:parse-v1`).digest('hex');
    let text = cache[key];
    if (text === undefined) {
      const bytes = readFileSync(documentPath(doc));
      text = doc.file.endsWith('.html') ? (await parseDocument(bytes, 'html', doc.file)).text : bytes.toString('utf8');
      cache[key] = text;
      added++;
    }
    texts.set(doc.id, text);
  }
  if (added > 0) {
    mkdirSync(join(TEXT_CACHE, '..'), { recursive: true });
    writeFileSync(TEXT_CACHE, JSON.stringify(cache));
  }
  return texts;
}
