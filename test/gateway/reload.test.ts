// Reloading GATEWAY_CONFIG without a restart: through the function SIGHUP calls (in-process)
// an invalid file is refused with its problems logged and the running catalog kept, and a
// valid one routes new requests while a stream in flight finishes on the catalog it started
// with; then once with a real child process (npm start's entry) and a real SIGHUP.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { startFakeOpenAI } from '../../mocks/upstreams/fake-openai.js';
import type { FakeUpstream } from '../../mocks/upstreams/faults.js';
import { loadCatalog } from '../../server/gateway/catalog.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

/** A catalog with one chat model per upstream, named as given. */
function config(models: Record<string, FakeUpstream>): string {
  const entries = Object.entries(models);
  return stringify({
    providers: entries.map(([name, u]) => ({ id: `p-${name}`, type: 'openai', base_url: `${u.url}/v1` })),
    deployments: entries.map(([name]) => ({ id: `d-${name}`, provider: `p-${name}`, model: `${name}-upstream` })),
    models: entries.map(([name]) => ({ id: name, family: 'openai', context_window: 10_000, max_output_tokens: 1_000, deployments: [`d-${name}`] })),
    routing: { tiers: { tier_1: [entries[0][0]], tier_2: [entries[0][0]], tier_3: [entries[0][0]] } },
    circuit: { probe_interval_ms: 0 },
  });
}

let dir: string;
let file: string;
let alpha: FakeUpstream;
let beta: FakeUpstream;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gateway-reload-'));
  file = join(dir, 'gateway.yaml');
  alpha = await startFakeOpenAI({ answer: 'alpha answers with quite a few words in a row.' });
  beta = await startFakeOpenAI({ answer: 'beta answers.' });
  await writeFile(file, config({ first: alpha }));
});
afterAll(async () => {
  await alpha?.close();
  await beta?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('reload through the function SIGHUP calls', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'info' }, { catalog: loadCatalog({ GATEWAY_CONFIG: file }) });
  }, 60_000);
  afterAll(() => platform?.close());

  const chat = (model: string, stream = false) =>
    platform.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: platform.adminKey, body: JSON.stringify({ model, stream, max_tokens: 50, messages: [{ role: 'user', content: 'Say it.' }] }) });
  const env = () => ({ GATEWAY_CONFIG: file });

  it('refuses an invalid file with every problem logged, and keeps serving the running catalog', async () => {
    await writeFile(file, stringify({ models: [{ id: 'broken', family: 'openai', context_window: 10, max_output_tokens: 5, deployments: ['nowhere'] }] }));
    const outcome = platform.reloadGatewayConfig(env());
    expect(outcome).toEqual({ ok: false, problems: ['model "broken": unknown deployment "nowhere"', 'routing.tiers.tier_1: missing (auto_routing needs a model per tier)', 'routing.tiers.tier_2: missing (auto_routing needs a model per tier)', 'routing.tiers.tier_3: missing (auto_routing needs a model per tier)'] });
    expect(platform.logs.some((line) => line.includes('gateway configuration refused') && line.includes('unknown deployment \\"nowhere\\"'))).toBe(true);
    const res = await chat('first');
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.content).toContain('alpha');
  });

  it('routes new requests on a valid file while a stream in flight finishes on the catalog it started with', async () => {
    alpha.config.chunkIntervalMs = 40;
    const inFlight = await chat('first', true);
    expect(inFlight.status).toBe(200);
    const reader = inFlight.body!.getReader();
    await reader.read(); // the stream is running on the old catalog

    await writeFile(file, config({ second: beta }));
    expect(platform.reloadGatewayConfig(env())).toEqual({ ok: true, models: 1 });

    let text = '';
    const decoder = new TextDecoder();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
    alpha.config.chunkIntervalMs = 0;
    expect(text).toContain('[DONE]');
    expect(text).not.toContain('"error"');
    expect(text).toContain('"content":" row."'); // the end of alpha's answer, after the reload

    const gone = await chat('first');
    expect(gone.status).toBe(400);
    expect((await gone.json()).error.name).toBe('UNSUPPORTED_MODEL');
    const served = await chat('second');
    expect(served.status).toBe(200);
    expect((await served.json()).choices[0].message.content).toContain('beta');
    const models = await (await platform.api('/ai/v2/models', { key: platform.adminKey })).json();
    expect(models.data.map((m: { id: string }) => m.id)).toContain('second');
    expect(models.data.map((m: { id: string }) => m.id)).not.toContain('first');
  }, 30_000);
});

describe('a real SIGHUP to the server process', () => {
  it('reloads a valid file and refuses an invalid one, and the process keeps running', async () => {
    await writeFile(file, config({ first: alpha }));
    // A clean environment: nothing of the test runner's (or a database, Redis or collector of the machine's).
    // node itself with tsx's loader (the tsx command is a parent process that would take the signal).
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, GATEWAY_CONFIG: file, PORT: '0', MGMT_PORT: '0', DATA_DIR: 'memory://', LOG_LEVEL: 'info', BOOTSTRAP_ADMIN_KEY: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await vi.waitFor(() => expect(out.slice(-2_000)).toContain('platform listening'), { timeout: 90_000, interval: 200 });

      await writeFile(file, config({ first: alpha, second: beta }));
      child.kill('SIGHUP');
      await vi.waitFor(() => expect(out).toContain('gateway configuration reloaded'), { timeout: 10_000, interval: 100 });
      expect(out).toMatch(/"models":2/);

      await writeFile(file, 'models: [{ id: "x" }]');
      child.kill('SIGHUP');
      await vi.waitFor(() => expect(out).toContain('gateway configuration refused'), { timeout: 10_000, interval: 100 });
      expect(out).toContain('models.0.family');
      expect(child.exitCode).toBeNull();
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
  }, 120_000);
});
