// A judge's tool for the labelled queries: what a plain BM25 ranks for a query in one tenant
// (the pool whose documents a judgment must consider), which documents hold a pattern, and a
// document's text as the platform extracts it.
//
//   npx tsx scripts/retrieval/pool.ts rank  <folder> "<query>"     # top 15 by plain BM25
//   npx tsx scripts/retrieval/pool.ts grep  <folder> "<regex>"     # documents holding it, with counts
//   npx tsx scripts/retrieval/pool.ts show  <document id>          # extracted text
//   npx tsx scripts/retrieval/pool.ts check <queries file>         # every judgment names a document of its tenant
//
// <folder> is postgresql, sqlite or python (test/fixtures/retrieval/corpus/<folder>).
import { readFileSync } from 'node:fs';
import { documentTexts, loadManifest, type LabelledQuery } from './corpus.js';
import { PlainBm25 } from './plain-bm25.js';

const firstHeading = (text: string) => /^#{1,6}[ \t]+(.+)$/m.exec(text)?.[1]?.trim() ?? text.split('\n', 1)[0]!.slice(0, 80);

async function main(): Promise<void> {
  const [command, first, second] = process.argv.slice(2);
  const manifest = loadManifest();
  if (command === 'show') {
    const doc = manifest.find((d) => d.id === first);
    if (!doc) throw new Error(`no document ${first}`);
    console.log((await documentTexts([doc])).get(doc.id));
    return;
  }
  if (command === 'check') {
    const ids = new Map(manifest.map((d) => [d.id, d.tenant]));
    const { queries } = JSON.parse(readFileSync(first!, 'utf8')) as { queries: LabelledQuery[] };
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const q of queries) {
      if (seen.has(q.id)) problems.push(`${q.id}: duplicate id`);
      seen.add(q.id);
      for (const id of Object.keys(q.relevant)) if (ids.get(id) !== q.tenant) problems.push(`${q.id}: relevant ${id} is not a document of ${q.tenant}`);
      for (const id of q.wrong ?? []) if (ids.get(id) !== q.tenant) problems.push(`${q.id}: wrong ${id} is not a document of ${q.tenant}`);
      for (const id of q.foreign ?? []) if (!ids.has(id) || ids.get(id) === q.tenant) problems.push(`${q.id}: foreign ${id} is not another tenant's document`);
      if (q.kind === 'cross-tenant' ? !q.foreign?.length : !Object.values(q.relevant).includes(2)) problems.push(`${q.id}: no judgment of its kind`);
      if (q.kind === 'near-miss' && !q.wrong?.length) problems.push(`${q.id}: a near miss names its wrong document`);
    }
    console.log(problems.length ? problems.join('\n') : `${queries.length} queries: every judgment names a document of the right tenant`);
    process.exitCode = problems.length ? 1 : 0;
    return;
  }
  const documents = manifest.filter((d) => d.id.startsWith(`${first}/`));
  if (documents.length === 0) throw new Error(`no documents in folder ${first}`);
  const texts = await documentTexts(documents);
  if (command === 'rank') {
    for (const [i, hit] of new PlainBm25(texts).search(second!, 15).entries()) {
      console.log(`${String(i + 1).padStart(2)}. ${hit.score.toFixed(2).padStart(6)}  ${hit.id}  — ${firstHeading(texts.get(hit.id)!)}`);
    }
  } else if (command === 'grep') {
    const pattern = new RegExp(second!, 'gi');
    const hits = [...texts].map(([id, text]) => ({ id, n: text.match(pattern)?.length ?? 0 })).filter((h) => h.n > 0);
    for (const hit of hits.sort((a, b) => b.n - a.n)) console.log(`${String(hit.n).padStart(4)}  ${hit.id}  — ${firstHeading(texts.get(hit.id)!)}`);
  } else {
    throw new Error('usage: pool.ts rank|grep <folder> <text> | show <id> | check <file>');
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
