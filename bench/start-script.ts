// What `npm start` runs the server with (package.json's start script): its environment
// assignments (malloc settings) and its Node flags, so benchmarks measure the shipped server.
import { readFileSync } from 'node:fs';

export function startScriptSettings(): { flags: string[]; env: Record<string, string> } {
  const script: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start;
  const words = script.split(/\s+/);
  const node = words.indexOf('node');
  const env = Object.fromEntries(words.slice(0, node).map((w) => w.split('=', 2) as [string, string]));
  return { flags: words.slice(node + 1).filter((w) => w.startsWith('--')), env };
}
