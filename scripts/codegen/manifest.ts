// generated/manifest.json: the SHA-256 of every file `npm run generate` wrote. A file whose
// content no longer matches was edited by hand (the generator would lose the edit); a file
// that matches but differs from fresh output is merely stale. check:generated tells which.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export const MANIFEST = 'manifest.json';

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** Every file under `dir` except the manifest, as sorted paths relative to `dir` with `/`. */
function filesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split('\\').join('/'))
    .filter((file) => file !== MANIFEST)
    .sort();
}

/** SHA-256 of every file under `dir` except the manifest, by path relative to `dir`. */
export function hashFiles(dir: string): Record<string, string> {
  return Object.fromEntries(filesOf(dir).map((file) => [file, sha256(join(dir, file))]));
}

export function writeManifest(dir: string): void {
  writeFileSync(join(dir, MANIFEST), `${JSON.stringify(hashFiles(dir), null, 2)}\n`);
}

export interface FileChanges {
  /** In both, with different content. */
  changed: string[];
  /** Only in the second. */
  added: string[];
  /** Only in the first. */
  removed: string[];
}

export const hasChanges = (changes: FileChanges) => changes.changed.length + changes.added.length + changes.removed.length > 0;

/** How one set of file hashes departs from another (all empty when equal). */
export function compareHashes(before: Record<string, string>, after: Record<string, string>): FileChanges {
  const files = (hashes: Record<string, string>) => Object.keys(hashes).sort();
  return {
    changed: files(after).filter((file) => before[file] !== undefined && before[file] !== after[file]),
    added: files(after).filter((file) => before[file] === undefined),
    removed: files(before).filter((file) => after[file] === undefined),
  };
}

/** How `dir` departs from its manifest: files edited, added or deleted since the last generate. */
export function handEdits(dir: string): FileChanges {
  const manifestFile = join(dir, MANIFEST);
  const recorded: Record<string, string> = existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')) : {};
  return compareHashes(recorded, hashFiles(dir));
}
