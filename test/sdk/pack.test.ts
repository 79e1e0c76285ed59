// The published package: built with tsup, within its size budget, packed with `npm pack`,
// installed from the tarball into an empty project, used from ESM and CommonJS against a
// local HTTP server, and typechecked by a strict consumer (node16 and bundler resolution).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const SDK = join(ROOT, 'sdk');
const BIN = join(ROOT, 'node_modules', '.bin');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let work: string;
let project: string;
let tarball: string;
let packedFiles: string[];
let sizeReport: { gzip: number; budget: number; reference: { name: string; version: string; min: number; gzip: number } };
let sizeOutput: string;
let server: http.Server;
let serverUrl: string;
const seen: Array<{ path: string; auth: string | undefined }> = [];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sdk-pack-'));
  await run(join(BIN, 'tsup'), [], { cwd: SDK });
  const size = await run(process.execPath, [join(SDK, 'scripts', 'size.mjs')], { cwd: SDK });
  sizeOutput = size.stdout;
  sizeReport = JSON.parse(size.stdout.trim().split('\n').at(-1)!);
  const pack = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: SDK });
  const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(work, info!.filename);
  packedFiles = info!.files.map((f) => f.path).sort();

  project = join(work, 'consumer');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '0.0.0', private: true }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', tarball], { cwd: project });

  server = http.createServer((req, res) => {
    seen.push({ path: req.url ?? '', auth: req.headers.authorization });
    if (req.url === '/api/v1/health') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-trace-id': 'trc_pack' });
      res.end(JSON.stringify({ data: { status: 'healthy', gateways: [] }, meta: { requestId: 'r' } }));
    } else if (req.url === '/ai/v2/guarded/chat/completions') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"packed"},"finish_reason":"stop"}]}\n\n');
      res.end('data: [DONE]\n\n');
    } else {
      res.writeHead(404, { 'content-type': 'application/json', 'x-trace-id': 'trc_404' });
      res.end(JSON.stringify({ detail: 'Item not found', trace_id: 'trc_404' }));
    }
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise((done) => server?.close(done));
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds only the build, the README and package.json, and has no dependencies', () => {
    expect(packedFiles).toEqual(['README.md', 'dist/index.cjs', 'dist/index.d.cts', 'dist/index.d.ts', 'dist/index.js', 'package.json']);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@inference-platform/sdk/package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: '@inference-platform/sdk', version: '1.0.0', type: 'module', sideEffects: false, engines: { node: '>=20' } });
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.peerDependencies).toBeUndefined();
    const installed = readFileSync(join(project, 'package.json'), 'utf8');
    expect(JSON.parse(installed).dependencies['@inference-platform/sdk']).toMatch(/\.tgz$/);
  });

  it('has a default export condition next to import and require, pointing at a packed file', () => {
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@inference-platform/sdk/package.json'), 'utf8'));
    const root = manifest.exports['.'];
    expect(Object.keys(root)).toEqual(['import', 'require', 'default']); // `default` last: conditions match in order
    expect(root.default).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(packedFiles).toContain(root.default.default.replace('./', ''));
    expect(packedFiles).toContain(root.default.types.replace('./', ''));
  });

  it('stays within the 20 kB min+gzip budget, smaller than openai-node bundled the same way, with no Node built-in in the runtime', () => {
    expect(sizeReport.gzip).toBeLessThanOrEqual(sizeReport.budget);
    // openai-node is measured next to ours (the installed version, its ESM entry bundled), not recorded.
    const openai = JSON.parse(readFileSync(join(ROOT, 'node_modules/openai/package.json'), 'utf8')) as { version: string };
    expect(sizeReport).toMatchObject({ budget: 20 * 1024, reference: { name: 'openai', version: openai.version } });
    const { reference } = sizeReport;
    expect(reference.gzip).toBeGreaterThan(sizeReport.gzip);
    expect(reference.gzip).toBeLessThan(reference.min);
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;
    expect(sizeOutput).toContain(`reference: openai ${openai.version} bundled the same way = ${kb(reference.min)} min, ${kb(reference.gzip)} min+gzip; ours: ${kb(sizeReport.gzip)}`);
    for (const file of ['dist/index.js', 'dist/index.cjs']) {
      const code = readFileSync(join(SDK, file), 'utf8');
      // hey-api's SSE client is unused (streams go through core/streaming.ts) and left out.
      expect(code, file).not.toMatch(/sseMaxRetryAttempts|Last-Event-ID/);
      expect(code, file).not.toMatch(/from ['"]node:|require\(['"](node:)?(fs|path|http|https|net|crypto|stream|os|url|zlib|child_process)['"]\)/);
      expect(code, file).not.toMatch(/\bprocess\.env\b(?!\?)/);
    }
  });

  it('works from an ES module', async () => {
    const script = join(project, 'esm.mjs');
    writeFileSync(
      script,
      `import { Platform, APIError, NotFoundError, SpendingLimitExceededError } from '@inference-platform/sdk';
const platform = new Platform({ apiKey: 'sk_esm', baseUrl: process.argv[2], managementBaseUrl: process.argv[2] });
const health = await platform.management.health();
const stream = await platform.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
const text = await stream.finalText();
const error = await platform.getItem({ path: { item_id: 'x' } }).catch((e) => e);
console.log(JSON.stringify({ status: health.data.status, text, notFound: error instanceof NotFoundError && error instanceof APIError, trace: error.traceId, named: typeof SpendingLimitExceededError }));
`,
    );
    const { stdout } = await run(process.execPath, [script, serverUrl], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({ status: 'healthy', text: 'packed', notFound: true, trace: 'trc_404', named: 'function' });
    expect(seen.filter((s) => s.auth === 'Bearer sk_esm').length).toBeGreaterThanOrEqual(3);
  });

  it('works from CommonJS', async () => {
    const script = join(project, 'cjs.cjs');
    writeFileSync(
      script,
      `const { Platform, SpendingLimitExceededError, RateLimitError } = require('@inference-platform/sdk');
const platform = new Platform({ apiKey: 'sk_cjs', baseUrl: process.argv[2], managementBaseUrl: process.argv[2] });
platform.getHealth().then((health) => {
  console.log(JSON.stringify({ status: health.data.status, hierarchy: SpendingLimitExceededError.prototype instanceof RateLimitError }));
});
`,
    );
    const { stdout } = await run(process.execPath, [script, serverUrl], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({ status: 'healthy', hierarchy: true });
    expect(seen.some((s) => s.auth === 'Bearer sk_cjs')).toBe(true);
  });

  it('typechecks a strict consumer with the packaged types (node16 ESM + CJS, and bundler)', async () => {
    const consumer = `import { Platform, APIError, SpendingLimitExceededError, isErrorNamed, type ChatCompletionStream, type Agent, type PlatformOptions, type ChatCompletion, type ChatCompletionCreateParamsNonStreaming } from '@inference-platform/sdk';

const options: PlatformOptions = { apiKey: 'sk_test', baseUrl: 'http://localhost:8080', timeout: 10_000 };
const platform = new Platform(options);

export async function main(): Promise<string> {
  const completion = await platform.createGuardedChatCompletion({ body: { model: 'm', messages: [{ role: 'user', content: 'Hi' }] } });
  const first: string | null | undefined = completion.choices[0]?.message.content;
  const params: ChatCompletionCreateParamsNonStreaming = { model: 'm', messages: [{ role: 'user', content: 'Hi' }] };
  const viaResource: ChatCompletion = await platform.chat.completions.create(params);
  const resourceStream: ChatCompletionStream = await platform.chat.completions.create({ ...params, stream: true });
  void viaResource;
  void resourceStream;
  const agent = await platform.management.agents.get('a');
  void agent.data.id;
  // @ts-expect-error: the agent id is required
  void platform.management.agents.get();
  const stream: ChatCompletionStream = await platform.createGuardedChatCompletion({ body: { model: 'm', stream: true, messages: [{ role: 'user', content: 'Hi' }] } });
  for await (const chunk of stream) void chunk;
  const agents: Agent[] = [];
  for await (const agent of platform.listAgents({ query: { limit: 10 } })) agents.push(agent);
  const { traceId } = await platform.getHealth().withResponse();
  try {
    await platform.getAgent({ path: { agent_id: 'a' } });
  } catch (error) {
    if (error instanceof SpendingLimitExceededError) return error.name;
    if (isErrorNamed(error, 'PROVIDER_TIMEOUT')) return String(error.status);
    if (error instanceof APIError) return [error.status, error.code, error.retryable, error.category, error.traceId].join(' ');
  }
  // @ts-expect-error: getAgent needs its path parameter
  void platform.getAgent();
  return [first, traceId, agents.length].join(' ');
}
`;
    writeFileSync(join(project, 'consumer.mts'), consumer);
    writeFileSync(join(project, 'consumer.cts'), consumer.replace('export async function main', 'export async function mainCjs'));
    const base = { strict: true, noEmit: true, skipLibCheck: false, target: 'ES2022', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true };
    writeFileSync(join(project, 'tsconfig.node16.json'), JSON.stringify({ compilerOptions: { ...base, module: 'node16', moduleResolution: 'node16' }, files: ['consumer.mts', 'consumer.cts'] }));
    writeFileSync(join(project, 'tsconfig.bundler.json'), JSON.stringify({ compilerOptions: { ...base, module: 'esnext', moduleResolution: 'bundler' }, files: ['consumer.mts'] }));
    for (const config of ['tsconfig.node16.json', 'tsconfig.bundler.json']) {
      const result = await run(process.execPath, [TSC, '-p', config], { cwd: project }).catch((error: { stdout: string }) => error);
      expect(result.stdout, config).toBe('');
    }
  }, 180_000);
});
