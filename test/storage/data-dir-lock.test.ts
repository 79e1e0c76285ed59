import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockDataDir } from '../../server/storage/data-dir-lock.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lock-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('lockDataDir', () => {
  it('lets one owner in at a time, in this process', async () => {
    const release = lockDataDir(dir);
    expect(await readFile(join(dir, 'platform.lock'), 'utf8')).toBe(String(process.pid));
    expect(() => lockDataDir(dir)).toThrow(/already open in this process/);
    release();
    lockDataDir(dir)();
  });

  it('refuses a directory another live process owns, naming it', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)']);
    try {
      await writeFile(join(dir, 'platform.lock'), String(other.pid));
      expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by process ${other.pid}`));
    } finally {
      other.kill();
    }
  });

  it('takes over a lock left by a process that is gone', async () => {
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => gone.on('exit', resolve));
    await writeFile(join(dir, 'platform.lock'), String(gone.pid));
    const release = lockDataDir(dir);
    expect(await readFile(join(dir, 'platform.lock'), 'utf8')).toBe(String(process.pid));
    release();
  });
});
