// A PGlite data directory has exactly one owner: a second process opening it (the operator
// CLI while the server runs, two servers) would corrupt it. A lock file names the owner.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive as alive } from './process-alive.js';

const LOCK_FILE = 'platform.lock';
/** Directories this process holds: its own pid in a lock file says nothing (pids repeat across container restarts). */
const held = new Set<string>();

/** Takes the directory, or throws naming the process that has it. Returns the release. */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, LOCK_FILE);
  if (held.has(file)) throw new Error(`the embedded database in ${dataDir} is already open in this process`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(file);
      return () => {
        held.delete(file);
        rmSync(file, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
        throw new Error(
          `the embedded database in ${dataDir} is in use by process ${owner}: stop it first (one process owns a PGlite directory), or use DATABASE_URL`,
        );
      }
      // Left behind by a process that is gone (or by this one): take it over.
      rmSync(file, { force: true });
    }
  }
  throw new Error(`could not lock ${file}`);
}
