// The server generator: deterministic output, a stub for every operation without a
// handler, existing handlers never overwritten, literal routes before parameterized ones.
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { routes } from '../../generated/contract/routes.js';
import { CONTRACT_PATH } from '../../server/app.js';
import { loadContract } from '../../scripts/codegen/contract.js';
import { generateServer } from '../../scripts/codegen/server.js';

const contract = loadContract(CONTRACT_PATH);
const temp: string[] = [];
afterAll(() => Promise.all(temp.map((d) => rm(d, { recursive: true, force: true }))));

async function generateInto(prepare?: (handlersDir: string) => Promise<void>) {
  const root = await mkdtemp(join(tmpdir(), 'codegen-'));
  temp.push(root);
  const paths = { generatedDir: join(root, 'generated'), handlersDir: join(root, 'server', 'handlers') };
  await prepare?.(paths.handlersDir);
  const { scaffolded } = generateServer(contract, paths);
  return { ...paths, scaffolded };
}

async function readTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) {
      const file = join(entry.parentPath, entry.name);
      out[file.slice(dir.length)] = await readFile(file, 'utf8');
    }
  }
  return out;
}

describe('generateServer', () => {
  it('writes the same files twice over', async () => {
    const a = await generateInto();
    const b = await generateInto();
    expect(await readTree(a.generatedDir)).toEqual(await readTree(b.generatedDir));
  });

  it('matches what is committed in generated/', async () => {
    const fresh = await generateInto();
    const committed = join(CONTRACT_PATH, '..', 'generated');
    for (const file of ['contract/routes.ts', 'contract/errors.ts', 'server/operations.ts']) {
      expect(await readFile(join(fresh.generatedDir, file), 'utf8'), file).toBe(await readFile(join(committed, file), 'utf8'));
    }
  });

  it('scaffolds a 501 stub for every operation without a handler and never overwrites one', async () => {
    const custom = '// hand-written\nexport const getHealth = 1;\n';
    const out = await generateInto(async (dir) => {
      await mkdir(join(dir, 'management'), { recursive: true });
      await writeFile(join(dir, 'management', 'getHealth.ts'), custom);
    });
    expect(out.scaffolded).toHaveLength(contract.operations.length - 1);
    expect(await readFile(join(out.handlersDir, 'management', 'getHealth.ts'), 'utf8')).toBe(custom);
    const stub = await readFile(join(out.handlersDir, 'items', 'getFile.ts'), 'utf8');
    expect(stub).toContain("notImplemented('getFile') satisfies AppHandler<'getFile'>");
  });

  it('binds every operation and orders literal path segments before parameters', () => {
    expect(routes.map((r) => r.operationId).sort()).toEqual(contract.operations.map((o) => o.operationId).sort());
    const guarded = routes.findIndex((r) => r.path === '/ai/v2/guarded/chat/completions');
    const coding = routes.findIndex((r) => r.path === '/ai/v2/{coding_product}/chat/completions');
    expect(guarded).toBeGreaterThanOrEqual(0);
    expect(guarded).toBeLessThan(coding);
  });
});
