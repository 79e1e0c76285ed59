// Spooled upload parts left behind by a server that died mid-request are removed at the next
// start (sweepSpool); those of processes still running, and files that are not spooled parts, stay.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sweepSpool } from '../../server/http/multipart.js';

it('removes the parts of dead processes and of an earlier run with this pid, keeps the rest', async () => {
  const directory = mkdtempSync(join(tmpdir(), 'spool-sweep-'));
  try {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const names = {
      dead: `upload-${dead}-0123abcd-${randomUUID()}`,
      earlierRun: `upload-${process.pid}-0123abcd-${randomUUID()}`,
      live: `upload-${process.ppid}-0123abcd-${randomUUID()}`,
      other: 'notes.txt',
    };
    for (const name of Object.values(names)) writeFileSync(join(directory, name), 'x');
    expect(await sweepSpool(directory)).toBe(2);
    expect(readdirSync(directory).sort()).toEqual([names.live, names.other].sort());
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
