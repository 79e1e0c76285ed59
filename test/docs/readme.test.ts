// The README is a door a new user walks through, so what it shows must be true:
// - its Layout block names every folder and file directly under server/ and generated/, and
//   names none that is gone;
// - its "First requests" block works as pasted: the server is started as `npm start` starts
//   it (the bundle, on a fresh embedded database, free ports through PORT/MGMT_PORT=0), the
//   reader's two variables are set from what the first start prints, the block's ports are
//   replaced by the real ones, and the block runs in bash, in order, with real curl. A curl
//   shell function records every call (status, URL, body) so that each is checked: a 2xx
//   with the shape the operation answers.
// It needs bash and curl; without them (not on CI) it says so and skips.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, SERVER_BUNDLE, startServerProcess, type ServerProcess } from '../support/server-process.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The text of a `## title` section, up to the next `## ` heading. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no "## ${title}" section`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The bodies of the fenced code blocks of `text` whose info string is `lang` ('' for none). */
function fencedBlocks(text: string, lang: string): string[] {
  return [...text.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1].trim() === lang).map((m) => m[2]);
}

/** The names a Layout block lists under `folder/` (indented entries, first word of each line). */
function layoutNames(block: string, folder: string): string[] {
  const lines = block.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`${folder}/`));
  if (start < 0) throw new Error(`the Layout block has no ${folder}/ entry`);
  const names: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith(' ')) break;
    // Entries are indented by two; deeper lines continue the description of the entry above.
    const entry = /^ {2}(\S+)/.exec(line);
    if (entry) names.push(entry[1].replace(/<[^>]+>\/$/, '').replace(/\/.*$/, '/'));
  }
  return names;
}

function entriesOf(folder: string): string[] {
  return readdirSync(join(ROOT, folder))
    .filter((name) => !name.startsWith('.') && (statSync(join(ROOT, folder, name)).isDirectory() || /\.ts$/.test(name)))
    .filter((name) => !name.endsWith('.d.ts'))
    .map((name) => (statSync(join(ROOT, folder, name)).isDirectory() ? `${name}/` : name))
    .sort();
}

describe('the README Layout block', () => {
  const [block] = fencedBlocks(section('Layout'), '');

  it.each(['server', 'generated'])('names every folder and module of %s/, and nothing that is not there', (folder) => {
    expect([...new Set(layoutNames(block, folder))].sort()).toEqual(entriesOf(folder));
  });

  it('names only top-level entries that exist', () => {
    const top = block
      .split('\n')
      .map((line) => /^(\S+)/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined);
    expect(top.length).toBeGreaterThan(8);
    for (const name of top) expect(() => statSync(join(ROOT, name)), name).not.toThrow();
  });
});

const hasTool = (tool: string) => spawnSync('bash', ['-c', `command -v ${tool}`]).status === 0;
const tools = hasTool('bash') && hasTool('curl');
if (!tools && process.env.CI) throw new Error('test/docs/readme.test.ts needs bash and curl on CI');
if (!tools) console.warn('test/docs/readme.test.ts: bash or curl is missing, so the First requests block is not run (CI has both)');

/** `npm start` as a reader runs it (the prestart build, then the bundle), on free ports and a fresh data directory. */
function startServer(dataDir: string): Promise<ServerProcess> {
  execFileSync(process.execPath, ['scripts/build-server.mjs', '--if-stale'], { cwd: ROOT, stdio: 'ignore' });
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', MGMT_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', LOCAL_EMBEDDER_THREADS: '1' };
  // The reader's server is the embedded default: nothing of the test machine's configuration.
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'GATEWAY_CONFIG', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'BOOTSTRAP_ADMIN_KEY', 'CORS_ORIGINS']) delete env[name];
  return startServerProcess(SERVER_BUNDLE, env);
}

/** What the reader copies from the first start: the admin key and the default publisher's id. */
function firstStartValues(stdout: string[]): { key: string; publisherId: string } {
  const text = stdout.join('\n');
  const key = /Admin API key \(all scopes\)[^\n]*\n\s*\n\s+(sk_\S+)/.exec(text)?.[1];
  // As a reader takes it: the line printed below the key.
  const publisherId = /Default publisher: "[^"]+", id ([0-9a-f-]{36})/.exec(text)?.[1];
  if (!key || !publisherId) throw new Error(`the first start printed no admin key or publisher id:\n${text}`);
  return { key, publisherId };
}

interface Call {
  status: number;
  url: string;
  args: string;
  body: string;
}

// Every curl of the block goes through this function: the real curl, its status and body
// kept in order in $CALLS (a file per body), and the body printed as curl would print it.
const CURL_RECORDER = `
curl() {
  local body code
  body=$(mktemp "$CALLS/body.XXXXXX")
  code=$(command curl -sS -o "$body" -w '%{http_code}' "$@") || { echo "curl failed: $*" >&2; return 1; }
  printf '%s\\t%s\\t%s\\n' "$code" "$body" "$(printf '%s ' "$@" | tr '\\t\\n' '  ')" >> "$CALLS/calls.tsv"
  cat "$body"
}
set -e
`;

function recordedCalls(dir: string): Call[] {
  return readFileSync(join(dir, 'calls.tsv'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [status, bodyFile, args] = line.split('\t');
      const url = /https?:\/\/\S+/.exec(args)?.[0] ?? '';
      return { status: Number(status), url, args, body: readFileSync(bodyFile, 'utf8') };
    });
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The chunks of an SSE body; it must end with [DONE]. */
function sseChunks(body: string): Array<{ choices: Array<{ delta: { content?: string } }> }> {
  const data = body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6));
  expect(data.at(-1)).toBe('[DONE]');
  return data.slice(0, -1).map((chunk) => JSON.parse(chunk));
}

describe.skipIf(!tools)('the README First requests block, pasted in order against a fresh server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'readme-'));
  let server: ServerProcess | undefined;
  let calls: Call[] = [];
  let script = '';
  let output = '';

  beforeAll(async () => {
    server = await startServer(join(dir, 'pglite'));
    const { key, publisherId } = firstStartValues(server.stdout);
    const block = fencedBlocks(section('First requests'), 'sh').join('\n');
    // What a reader changes: the two values, and (here only) the ports the server was given.
    expect(block).toMatch(/^KEY=.*$/m);
    expect(block).toMatch(/^PUB=.*$/m);
    script = block
      .replace(/^KEY=.*$/m, `KEY=${key}`)
      .replace(/^PUB=.*$/m, `PUB=${publisherId}`)
      .replaceAll('http://127.0.0.1:8080', server.apiUrl)
      .replaceAll('http://127.0.0.1:8081', server.mgmtUrl);
    const work = join(dir, 'shell');
    mkdirSync(work);
    const run = spawnSync('bash', ['-c', CURL_RECORDER + script], { cwd: work, env: { ...process.env, CALLS: dir }, encoding: 'utf8', timeout: 150_000 });
    output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, `the block failed:\n${output}`).toBe(0);
    calls = recordedCalls(dir);
  }, 240_000);

  afterAll(async () => {
    if (server?.process.exitCode === null) {
      server.process.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes every call it shows, on the port that serves it, each answered 2xx', () => {
    const shown = [...script.matchAll(/(https?:\/\/[^\s'"]+)/g)].map((m) => m[1]);
    expect(shown.length).toBeGreaterThanOrEqual(9);
    for (const url of shown) {
      // A shell variable in the URL ($ITEM) stands for one path segment.
      const pattern = new RegExp('^' + url.split(/\$\w+/).map(escapeRegExp).join('[^/?]+') + '$');
      expect(calls.some((c) => pattern.test(c.url)), `a call to ${url} among ${calls.map((c) => c.url).join(', ')}`).toBe(true);
    }
    for (const call of calls) expect(call.status, `${call.url}: ${call.body}`).toBeGreaterThanOrEqual(200);
    for (const call of calls) expect(call.status, `${call.url}: ${call.body}`).toBeLessThan(300);
    expect(calls.filter((c) => c.url.startsWith(server!.mgmtUrl)).every((c) => c.url.includes('/api/v1/'))).toBe(true);
  });

  const path = (call: Call) => new URL(call.url).pathname;
  const one = (pathname: string, stream = false) => {
    const found = calls.filter((c) => path(c) === pathname && c.args.includes('"stream":true') === stream);
    expect(found.length, `calls to ${pathname}${stream ? ' (stream)' : ''}`).toBeGreaterThanOrEqual(1);
    return found.at(-1)!;
  };
  const json = (call: Call) => JSON.parse(call.body);
  const uploaded = () => json(one('/ingestion/v2/files')).ingesting[0] as string;

  it('checks health on the management port', () => {
    expect(json(one('/api/v1/health')).data.status).toBe('healthy');
  });

  it('gets a chat completion and a stream', () => {
    const completion = json(one('/ai/v2/guarded/chat/completions'));
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0].message.content.length).toBeGreaterThan(0);
    const text = sseChunks(one('/ai/v2/guarded/chat/completions', true).body)
      .map((chunk) => chunk.choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toBe(completion.choices[0].message.content);
  });

  it('gets embeddings', () => {
    const embeddings = json(one('/ai/v2/embeddings'));
    expect(embeddings.data[0].embedding).toHaveLength(512);
  });

  it('uploads a file, and waits for it on the item endpoint until it is COMPLETED', () => {
    expect(uploaded()).toMatch(/^[0-9a-f-]{36}$/);
    const polls = calls.filter((c) => path(c) === `/engine/v2/items/${uploaded()}`);
    expect(polls.length).toBeGreaterThanOrEqual(1);
    expect(json(polls.at(-1)!).status).toBe('COMPLETED');
    expect(output).toContain(uploaded());
  });

  it('finds the uploaded file by search', () => {
    const results = json(one('/ai/v1/data/search')).data as Array<{ properties: { item_id: string } }>;
    expect(results.map((r) => r.properties.item_id)).toContain(uploaded());
  });

  it('gets a grounded answer citing the file with [n] markers', () => {
    const answer = json(one('/ai/v2/grounded/chat/completions'));
    expect(answer.sources_returned).toBe(true);
    expect(answer.citations[0].item_id).toBe(uploaded());
    expect(answer.choices[0].message.content).toMatch(/\[1\]/);
  });

  it('gets a Responses API answer', () => {
    const response = json(one('/ai/v2/guarded/responses'));
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text.length).toBeGreaterThan(0);
  });
});
