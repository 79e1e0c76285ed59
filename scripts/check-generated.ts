// `npm run check:generated`: generated/ must be exactly what `npm run generate` makes of
// openapi.yaml and prisma/schema.prisma. A hand edit is reported by name and left in place
// (the generator would overwrite it); otherwise the output is regenerated and any file that
// changes (or a handler stub that had to be scaffolded) is reported as stale. Output that is
// current but not committed yet is only mentioned (scripts/codegen/freshness.ts decides).
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verdict, uncommittedPaths } from './codegen/freshness.js';
import { compareHashes, handEdits, hasChanges, hashFiles } from './codegen/manifest.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUTPUT_DIRS = ['generated', 'server/handlers'];

/** Hashes of every file the generator writes or scaffolds, by path from the repository root. */
const snapshot = () => Object.fromEntries(OUTPUT_DIRS.flatMap((dir) => Object.entries(hashFiles(join(root, dir))).map(([file, hash]) => [`${dir}/${file}`, hash])));

function check() {
  const edits = handEdits(join(root, 'generated'));
  if (hasChanges(edits)) return verdict({ handEdits: edits });
  const before = snapshot();
  execFileSync(process.execPath, [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(root, 'scripts', 'generate.ts')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  // Read-only: no index refresh, so a check running beside other git commands takes no lock.
  const status = execFileSync('git', ['--no-optional-locks', 'status', '--porcelain=v1', '--untracked-files=all', '--', 'generated'], { cwd: root, encoding: 'utf8' });
  return verdict({ handEdits: edits, regenerated: compareHashes(before, snapshot()), uncommitted: uncommittedPaths(status) });
}

const { ok, report } = check();
if (ok) console.log(report);
else console.error(report);
process.exit(ok ? 0 : 1);
