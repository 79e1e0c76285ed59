// The retrieval evaluation corpus (test/fixtures/retrieval): its documents as the manifest
// lists them, their text as the platform's own parsers extract it (cached in .data, since
// parsing 1,300 HTML pages takes a while), and the labelled queries.
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TextChunk } from '../../server/data/ingestion/chunker.js';
import { documentPassages as parsedPassages, parseDocument } from '../../server/data/ingestion/parse.js';
import { loadConfig } from '../../server/config.js';
import { chunkOptions } from '../../server/data/ingestion/pipeline.js';
import type { Embedder } from '../../server/providers/local/embedder.js';

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

/** A grounded conversation whose last message only makes sense with the turns before it. */
export interface LabelledConversation {
  id: string;
  tenant: string;
  messages: { role: 'user' | 'assistant'; content: string }[];
  relevant: Record<string, number>;
  note?: string;
}

export function loadConversations(): LabelledConversation[] {
  const dir = join(FIXTURES, 'conversations');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .flatMap((name) => (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { conversations: LabelledConversation[] }).conversations);
}

/**
 * Topic switches: each labelled conversation's earlier turns followed by a question that stands
 * on its own and is about something else (a labelled paraphrase query of the same tenant whose
 * judged documents share none with the conversation's). The earlier turns must not pull its
 * retrieval away from what it asks. Built from checked judgments, deterministically.
 */
export function topicSwitches(conversations: LabelledConversation[], queries: LabelledQuery[]): LabelledConversation[] {
  const used = new Set<string>();
  return conversations.flatMap((conversation) => {
    const judged = new Set(Object.keys(conversation.relevant));
    const next = queries.find(
      (q) => q.kind === 'paraphrase' && q.tenant === conversation.tenant && !used.has(q.id) && !Object.keys(q.relevant).some((id) => judged.has(id)),
    );
    if (!next) return [];
    used.add(next.id);
    const before = conversation.messages.slice(0, conversation.messages.findLastIndex((m) => m.role === 'user'));
    return [{ id: `${conversation.id}-switch`, tenant: conversation.tenant, messages: [...before, { role: 'user' as const, content: next.query }], relevant: next.relevant }];
  });
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

/** The content limits ingestion applies by default. */
const LIMITS = loadConfig({}).ingestLimits;

/** The parser's own source: a change to it makes the cached texts stale. */
const PARSER = createHash('sha256')
  .update(readFileSync(fileURLToPath(new URL('../../server/data/ingestion/parse.ts', import.meta.url))))
  .digest('hex');

/** The text the platform extracts from each document (HTML parsed as ingestion parses it; text as is). */
export async function documentTexts(documents: CorpusDocument[]): Promise<Map<string, string>> {
  const cache: Record<string, string> = existsSync(TEXT_CACHE) ? JSON.parse(readFileSync(TEXT_CACHE, 'utf8')) : {};
  let added = 0;
  const texts = new Map<string, string>();
  for (const doc of documents) {
    const key = createHash('sha256').update(`${doc.sha256}:${PARSER}`).digest('hex');
    let text = cache[key];
    if (text === undefined) {
      const bytes = readFileSync(documentPath(doc));
      text = doc.file.endsWith('.html') ? (await parseDocument(bytes, 'html', doc.file, LIMITS)).text : bytes.toString('utf8');
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

export interface DocumentPassages {
  id: string;
  title: string | null;
  passages: TextChunk[];
}

/** Each document's title and passages, made by the platform's own parsers and chunker, as ingestion makes them. */
export async function documentPassages(documents: CorpusDocument[], maxInputTokens: number): Promise<DocumentPassages[]> {
  const out: DocumentPassages[] = [];
  for (const doc of documents) {
    const bytes = readFileSync(documentPath(doc));
    const { title, passages } = await parsedPassages(bytes, doc.file.endsWith('.html') ? 'html' : 'txt', doc.file, chunkOptions(maxInputTokens), LIMITS);
    out.push({ id: doc.id, title, passages });
  }
  return out;
}

const EMBEDDING_CACHE = fileURLToPath(new URL('../../.data/retrieval-embeddings/', import.meta.url));

/**
 * Vectors of `texts` by `embedder`, each computed once per machine: kept in .data by the
 * SHA-256 of model and text, so a change of ranking is evaluated in seconds rather than the
 * hour the local model takes to embed the corpus. `onProgress` hears how many are done.
 */
export async function embedCached(embedder: Embedder, texts: string[], onProgress?: (done: number, total: number) => void): Promise<number[][]> {
  mkdirSync(EMBEDDING_CACHE, { recursive: true });
  const file = join(EMBEDDING_CACHE, `${embedder.model}.jsonl`);
  const cache = new Map<string, number[]>();
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      const [key, vector] = JSON.parse(line) as [string, string];
      // A small Buffer is a view of Node's shared pool: read its own bytes only.
      const bytes = Buffer.from(vector, 'base64');
      cache.set(key, [...new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)]);
    }
  }
  const keyOf = (text: string) => createHash('sha256').update(`${embedder.model}\n${text}`).digest('hex');
  const missing = [...new Set(texts.filter((text) => !cache.has(keyOf(text))))];
  const BATCH = 32;
  for (let start = 0; start < missing.length; start += BATCH) {
    const batch = missing.slice(start, start + BATCH);
    const vectors = await embedder.embed(batch);
    appendFileSync(file, batch.map((text, i) => `${JSON.stringify([keyOf(text), Buffer.from(new Float32Array(vectors[i]!).buffer).toString('base64')])}\n`).join(''));
    batch.forEach((text, i) => cache.set(keyOf(text), vectors[i]!));
    onProgress?.(start + batch.length, missing.length);
  }
  return texts.map((text) => cache.get(keyOf(text))!);
}
