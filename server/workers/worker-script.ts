// Where a worker thread's code is. From source (tests, tsx) it is the TypeScript file, loaded
// through tsx's hooks; in the shipped server it is a file of its own beside the bundle
// (dist/server/<name>.js: scripts/build-server.mjs builds one per worker), since the bundle
// inlines this module into dist/server/main.js.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

export interface WorkerScript {
  filename: string;
  execArgv: string[];
}

/** `source`: the worker's TypeScript file; `bundled`: its file name beside the bundle. */
export function workerScript(source: URL, bundled: string): WorkerScript {
  if (!import.meta.url.endsWith('.ts')) return { filename: new URL(`./${bundled}`, import.meta.url).href, execArgv: [] };
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { filename: source.href, execArgv: ['--import', tsx] };
}
