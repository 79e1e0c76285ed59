// `npm run check:generated`: generated/ must be exactly what `npm run generate` makes of the
// committed contract and schema. A hand edit is reported by name and left in place (the
// generator would overwrite it); otherwise the output is regenerated and any file that
// changes (or a handler stub that had to be scaffolded) is reported as stale.
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { handEdits } from './codegen/manifest.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' });

const edits = handEdits(join(root, 'generated'));
const handMade = [
  ...edits.edited.map((f) => `edited by hand: generated/${f}`),
  ...edits.added.map((f) => `not generated:  generated/${f}`),
  ...edits.removed.map((f) => `deleted:        generated/${f}`),
];
if (handMade.length > 0) {
  console.error(handMade.join('\n'));
  console.error('\ngenerated/ is never edited by hand: change openapi.yaml, prisma/schema.prisma or scripts/codegen/,');
  console.error("then run 'npm run generate' (it overwrites the files above; nothing was regenerated yet).");
  process.exit(1);
}

execFileSync(process.execPath, [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(root, 'scripts', 'generate.ts')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
const stale = git('status', '--porcelain', '--', 'generated', 'server/handlers').trimEnd();
if (stale) {
  console.error(stale);
  console.error("\nthe files above are stale (or a handler was missing): run 'npm run generate' and commit the result.");
  process.exit(1);
}
console.log('generated/ matches openapi.yaml and prisma/schema.prisma');
