// check:generated tells a hand edit in generated/ from stale output by the manifest of hashes.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { handEdits, writeManifest } from '../../scripts/codegen/manifest.js';

const GENERATED_DIR = resolve(import.meta.dirname, '../../generated');
const temp: string[] = [];
afterAll(() => Promise.all(temp.map((d) => rm(d, { recursive: true, force: true }))));

async function generatedDir() {
  const dir = await mkdtemp(join(tmpdir(), 'manifest-'));
  temp.push(dir);
  await mkdir(join(dir, 'contract'));
  await writeFile(join(dir, 'contract', 'routes.ts'), 'export const routes = [];\n');
  await writeFile(join(dir, 'types.ts'), 'export type A = 1;\n');
  writeManifest(dir);
  return dir;
}

describe('handEdits', () => {
  it('finds nothing right after a generate, and nothing in the committed generated/', async () => {
    expect(handEdits(await generatedDir())).toEqual({ changed: [], added: [], removed: [] });
    expect(handEdits(GENERATED_DIR)).toEqual({ changed: [], added: [], removed: [] });
  });

  it('names edited, added and deleted files', async () => {
    const dir = await generatedDir();
    await writeFile(join(dir, 'contract', 'routes.ts'), 'export const routes = [1];\n');
    await writeFile(join(dir, 'extra.ts'), '');
    await rm(join(dir, 'types.ts'));
    expect(handEdits(dir)).toEqual({ changed: ['contract/routes.ts'], added: ['extra.ts'], removed: ['types.ts'] });
  });
});
