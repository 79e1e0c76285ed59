// Builds the retrieval evaluation corpus in test/fixtures/retrieval/corpus from the
// documentation that Debian packages ship, under permissive licences only, as the files were
// shipped (HTML pages, reStructuredText sources): what a publisher would upload. Run once;
// the corpus is committed, so evaluation needs neither the network nor these packages.
//
//   npx tsx scripts/retrieval/build-corpus.ts      # needs apt-get download and dpkg-deb
//
// The sample is deterministic (files ordered by the SHA-256 of their path), so running it
// again with the same package versions writes the same corpus.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const OUT = fileURLToPath(new URL('../../test/fixtures/retrieval/', import.meta.url));

/** Documents of 1–50 KB, the range the evaluation asks for. */
const MIN_BYTES = 1024;
const MAX_BYTES = 50 * 1024;

interface Source {
  /** The publisher (tenant) the documents are uploaded to. */
  tenant: string;
  /** Its folder under corpus/. */
  folder: string;
  domain: string;
  package: string;
  /** The licence of the documentation, as the package's copyright file states it. */
  license: string;
  /** Where the documents are inside the package. */
  root: string;
  matches: (path: string) => boolean;
  /** How many of the eligible documents to take (all when larger). */
  take: number;
}

const SOURCES: Source[] = [
  {
    tenant: 'PostgreSQL Manual',
    folder: 'postgresql',
    domain: 'databases',
    package: 'postgresql-doc-15',
    license: 'PostgreSQL (permissive, BSD-style; /usr/share/doc/postgresql-doc-15/copyright)',
    root: 'usr/share/doc/postgresql-doc-15/html',
    matches: (path) => path.endsWith('.html') && !path.includes('/'),
    take: 600,
  },
  {
    tenant: 'SQLite Docs',
    folder: 'sqlite',
    domain: 'databases',
    package: 'sqlite3-doc',
    license: 'public-domain (/usr/share/doc/sqlite3-doc/copyright)',
    root: 'usr/share/doc/sqlite3',
    matches: (path) => path.endsWith('.html'),
    take: 350,
  },
  {
    tenant: 'Python Docs',
    folder: 'python',
    domain: 'programming',
    package: 'python3.11-doc',
    license: 'PSF-2.0 (Python Software Foundation License Version 2; /usr/share/doc/python3.11-doc/copyright)',
    root: 'usr/share/doc/python3.11/html/_sources',
    matches: (path) => path.endsWith('.rst.txt'),
    take: 400,
  },
];

export interface CorpusDocument {
  /** `<folder>/<file>`: the document's id in judgments. */
  id: string;
  tenant: string;
  domain: string;
  file: string;
  package: string;
  version: string;
  license: string;
  /** Its path inside the package. */
  source: string;
  bytes: number;
  sha256: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : entry.isFile() ? [join(dir, entry.name)] : [],
  );
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

function main(): void {
  const work = mkdtempSync(join(tmpdir(), 'retrieval-corpus-'));
  const documents: CorpusDocument[] = [];
  try {
    rmSync(join(OUT, 'corpus'), { recursive: true, force: true });
    for (const source of SOURCES) {
      execFileSync('apt-get', ['download', source.package], { cwd: work, stdio: 'ignore' });
      const deb = readdirSync(work).find((name) => name.startsWith(`${source.package}_`) && name.endsWith('.deb'))!;
      const version = deb.split('_')[1]!.replaceAll('%3a', ':');
      const unpacked = join(work, source.package);
      execFileSync('dpkg-deb', ['-x', join(work, deb), unpacked]);
      const root = join(unpacked, source.root);
      const eligible = walk(root)
        .map((path) => relative(root, path))
        .filter((path) => source.matches(path))
        .filter((path) => {
          const { size } = statSync(join(root, path));
          return size >= MIN_BYTES && size <= MAX_BYTES;
        })
        .sort((a, b) => sha256(a).localeCompare(sha256(b)))
        .slice(0, source.take)
        .sort();
      mkdirSync(join(OUT, 'corpus', source.folder), { recursive: true });
      for (const path of eligible) {
        const file = path.replaceAll('/', '--');
        const bytes = readFileSync(join(root, path));
        copyFileSync(join(root, path), join(OUT, 'corpus', source.folder, file));
        documents.push({
          id: `${source.folder}/${file}`,
          tenant: source.tenant,
          domain: source.domain,
          file,
          package: source.package,
          version,
          license: source.license,
          source: join('/', source.root, path),
          bytes: bytes.length,
          sha256: sha256(bytes),
        });
      }
      console.log(`${source.tenant}: ${eligible.length} documents from ${source.package} ${version}`);
    }
    writeFileSync(join(OUT, 'manifest.json'), `${JSON.stringify({ documents }, null, 1)}\n`);
    console.log(`${documents.length} documents, ${(documents.reduce((n, d) => n + d.bytes, 0) / 1e6).toFixed(1)} MB`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main();
