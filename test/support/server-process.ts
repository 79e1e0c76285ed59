// The platform as a child process, for the suites that need a real process (killed mid-work,
// or started as a reader starts it): resolves once it logs `platform listening`, with the
// addresses it took (PORT=0 and MGMT_PORT=0 give free ports) and every stdout line so far.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const ROOT = join(import.meta.dirname, '..', '..');

/** How to run the server: from source through tsx, or the bundle `npm start` runs (built beforehand). */
export const SERVER_FROM_SOURCE = ['--import', 'tsx', 'server/main.ts'];
export const SERVER_BUNDLE = ['dist/server/main.js'];

export interface ServerProcess {
  process: ChildProcess;
  apiUrl: string;
  mgmtUrl: string;
  /** stdout so far, line by line (the admin key block and the JSON log lines). */
  stdout: string[];
  exited: Promise<number | null>;
}

export async function startServerProcess(args: string[], env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stdout: string[] = [];
  const stderr: string[] = [];
  child.stderr!.on('data', (chunk) => stderr.push(String(chunk)));
  const urls = await new Promise<{ apiUrl: string; mgmtUrl: string }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      stdout.push(line);
      const entry = (() => {
        try {
          return JSON.parse(line) as { msg?: string; apiUrl?: string; mgmtUrl?: string };
        } catch {
          return {};
        }
      })();
      if (entry.msg === 'platform listening' && entry.apiUrl && entry.mgmtUrl) resolve({ apiUrl: entry.apiUrl, mgmtUrl: entry.mgmtUrl });
    });
    void exited.then((code) => reject(new Error(`server exited (${code}) before listening: ${stderr.join('')}`)));
  });
  return { process: child, ...urls, stdout, exited };
}
