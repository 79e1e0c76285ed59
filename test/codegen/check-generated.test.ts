// check:generated names what is wrong with generated/ and fails only for what CI must refuse:
// hand edits and stale output. Output that is current but not committed yet is mentioned,
// not refused (the old check compared with HEAD and called it stale).
import { describe, expect, it } from 'vitest';
import { uncommittedPaths, verdict } from '../../scripts/codegen/freshness.js';
import { compareHashes, type FileChanges } from '../../scripts/codegen/manifest.js';

const none: FileChanges = { changed: [], added: [], removed: [] };

describe('check:generated verdict', () => {
  it('output that is current but not committed passes and names the files, without calling them stale', () => {
    const result = verdict({ handEdits: none, regenerated: none, uncommitted: ['generated/manifest.json', 'generated/types/openapi.d.ts'] });
    expect(result.ok).toBe(true);
    expect(result.report).toMatch(/not committed yet/);
    expect(result.report).toContain('  generated/manifest.json\n  generated/types/openapi.d.ts\n');
    expect(result.report).not.toMatch(/stale/);
  });

  it('output regenerating changes fails and names each file by what happened to it, uncommitted or not', () => {
    const regenerated = { changed: ['generated/types/openapi.d.ts'], added: ['server/handlers/things/getThing.ts'], removed: ['generated/contract/old.ts'] };
    const result = verdict({ handEdits: none, regenerated, uncommitted: ['generated/types/openapi.d.ts'] });
    expect(result.ok).toBe(false);
    expect(result.report.split('\n').slice(0, 3)).toEqual([
      'stale:          generated/types/openapi.d.ts',
      'new:            server/handlers/things/getThing.ts',
      'no longer made: generated/contract/old.ts',
    ]);
  });

  it('a hand edit fails before anything is regenerated, named under generated/', () => {
    const result = verdict({ handEdits: { changed: ['contract/routes.ts'], added: ['notes.md'], removed: ['types/openapi.d.ts'] } });
    expect(result.ok).toBe(false);
    expect(result.report.split('\n').slice(0, 3)).toEqual([
      'edited by hand: generated/contract/routes.ts',
      'not generated:  generated/notes.md',
      'deleted:        generated/types/openapi.d.ts',
    ]);
    expect(result.report).toMatch(/nothing was regenerated yet/);
  });

  it('committed output that regenerating leaves alone passes quietly', () => {
    expect(verdict({ handEdits: none, regenerated: none, uncommitted: [] })).toEqual({ ok: true, report: 'generated/ matches openapi.yaml and prisma/schema.prisma' });
  });
});

describe('what the verdict is given', () => {
  it('compareHashes: changed, added and removed files between two snapshots', () => {
    expect(compareHashes({ 'a.ts': '1', 'b.ts': '2', 'c.ts': '3' }, { 'a.ts': '1', 'b.ts': '9', 'd.ts': '4' })).toEqual({ changed: ['b.ts'], added: ['d.ts'], removed: ['c.ts'] });
  });

  it('uncommittedPaths: modified, staged, untracked and renamed entries of git status --porcelain', () => {
    const porcelain = ' M generated/a.ts\nM  generated/b.ts\n?? generated/c.ts\nR  generated/old.ts -> generated/d.ts\n';
    expect(uncommittedPaths(porcelain)).toEqual(['generated/a.ts', 'generated/b.ts', 'generated/c.ts', 'generated/d.ts']);
  });
});
