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

export function writeManifest(dir: string): void {
  const hashes = Object.fromEntries(filesOf(dir).map((file) => [file, sha256(join(dir, file))]));
  writeFileSync(join(dir, MANIFEST), `${JSON.stringify(hashes, null, 2)}\n`);
}

export interface HandEdits {
  /** Content differs from what the generator wrote. */
  edited: string[];
  /** Not written by the generator. */
  added: string[];
  /** Written by the generator, since deleted. */
  removed: string[];
}

/** How `dir` departs from its manifest (all empty when untouched since the last generate). */
export function handEdits(dir: string): HandEdits {
  const manifestFile = join(dir, MANIFEST);
  const recorded: Record<string, string> = existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')) : {};
  const present = filesOf(dir);
  return {
    edited: present.filter((file) => recorded[file] !== undefined && recorded[file] !== sha256(join(dir, file))),
    added: present.filter((file) => recorded[file] === undefined),
    removed: Object.keys(recorded).filter((file) => !present.includes(file)),
  };
}
