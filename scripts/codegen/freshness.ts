// check:generated's verdict, kept apart from the file system and git so a test can give it
// any situation. Three things can be wrong with generated/, and each is named differently:
// a hand edit (the manifest of hashes no longer matches: regenerating would lose it), stale
// output (regenerating changes files) and output that is current but not committed yet
// (fine while working; a clean CI checkout never has any).
import { hasChanges, type FileChanges } from './manifest.js';

export interface Observed {
  /** generated/ against its manifest before anything is regenerated (paths relative to generated/). */
  handEdits: FileChanges;
  /** What regenerating changed in generated/ and server/handlers (paths from the repository root); absent when hand edits stopped the check first. */
  regenerated?: FileChanges;
  /** Files under generated/ that git has not committed as they are (paths from the repository root). */
  uncommitted?: string[];
}

export interface Verdict {
  ok: boolean;
  report: string;
}

export function verdict({ handEdits, regenerated, uncommitted = [] }: Observed): Verdict {
  if (hasChanges(handEdits)) {
    return {
      ok: false,
      report: [
        ...handEdits.changed.map((f) => `edited by hand: generated/${f}`),
        ...handEdits.added.map((f) => `not generated:  generated/${f}`),
        ...handEdits.removed.map((f) => `deleted:        generated/${f}`),
        '',
        'generated/ is never edited by hand: change openapi.yaml, prisma/schema.prisma or scripts/codegen/,',
        "then run 'npm run generate' (it overwrites the files above; nothing was regenerated yet).",
      ].join('\n'),
    };
  }
  if (regenerated && hasChanges(regenerated)) {
    return {
      ok: false,
      report: [
        ...regenerated.changed.map((f) => `stale:          ${f}`),
        ...regenerated.added.map((f) => `new:            ${f}`),
        ...regenerated.removed.map((f) => `no longer made: ${f}`),
        '',
        'the files above were out of date with openapi.yaml and prisma/schema.prisma; they are regenerated now',
        '(a new handler is a stub to fill in): review and commit them.',
      ].join('\n'),
    };
  }
  if (uncommitted.length > 0) {
    return {
      ok: true,
      report: [
        'generated/ matches openapi.yaml and prisma/schema.prisma, but these files are not committed yet:',
        ...uncommitted.map((f) => `  ${f}`),
        'commit them with the change that produced them.',
      ].join('\n'),
    };
  }
  return { ok: true, report: 'generated/ matches openapi.yaml and prisma/schema.prisma' };
}

/** Paths named by `git status --porcelain` (v1): modified, staged, untracked or renamed (the new name). */
export function uncommittedPaths(porcelain: string): string[] {
  return porcelain
    .split('\n')
    .filter((line) => line.length > 3)
    .map((line) => line.slice(3).split(' -> ').pop()!);
}
