// Throughput and latency of the request pipeline (trace id, auth with the credential cache,
// contract validation, handler, envelope) against a bare Express baseline answering the
// same body, side by side on this machine. Usage: npm run bench:pipeline [-- seconds]
//
// CPU µs per request is this whole process's (server and load generator, both in-process)
// divided by the requests answered: compare rows with the baseline's, which carries the
// same load-generator share.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import express from 'express';
import { loadConfig } from '../server/config.js';
import { createLogger } from '../server/logging.js';
import { startPlatform } from '../server/server.js';

const seconds = Number(process.argv[2] ?? 5);
const connections = 10;

interface Result {
  name: string;
  requests: number;
  p50: number;
  p99: number;
  cpuMicros: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Result> {
  const cpu = process.cpuUsage();
  const run = await autocannon({ connections, duration: seconds, ...options });
  const { user, system } = process.cpuUsage(cpu);
  // Runs named "(4xx path)" measure a refusal on purpose.
  if (run.non2xx > 0 && !/\(4\d\d path\)/.test(name)) throw new Error(`${name}: ${run.non2xx} non-2xx answers`);
  const answered = run.requests.total;
  return { name, requests: run.requests.average, p50: run.latency.p50, p99: run.latency.p99, cpuMicros: (user + system) / answered };
}

async function main(): Promise<void> {
  const platform = await startPlatform(
    { ...loadConfig({}), port: 0, mgmtPort: 0, dataDir: 'memory://', logLevel: 'silent', bootstrapAdminKey: false },
    createLogger('silent'),
  );
  const key = platform.bootstrap!.adminKey!;
  const health = await (await fetch(`${platform.mgmtUrl}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } })).json();

  const baseline = express().get('/api/v1/health', (_req, res) => res.json(health));
  const server = baseline.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const baselineUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const auth = { authorization: `Bearer ${key}` };

  const results = [
    await measure('baseline: bare Express, same body', { url: `${baselineUrl}/api/v1/health` }),
    await measure('GET /api/v1/health (auth, validation, database ping)', { url: `${platform.mgmtUrl}/api/v1/health`, headers: auth }),
    await measure('GET /api/v1/agents?limit=20 (auth, validation, query)', { url: `${platform.mgmtUrl}/api/v1/agents?limit=20`, headers: auth }),
    await measure('POST chat completion with a bad body (422 path)', {
      url: `${platform.apiUrl}/ai/v2/guarded/chat/completions`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', temperature: 'hot' }),
    }),
    // A valid body the handler refuses (unknown model), with a fresh Idempotency-Key per request as the SDK sends.
    await measure('POST chat completion with an Idempotency-Key, unknown model (400 path)', {
      url: `${platform.apiUrl}/ai/v2/guarded/chat/completions`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
      requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }],
    }),
  ];
  server.close();
  await platform.close();

  const base = results[0].requests;
  console.log(`\n${seconds} s per run, ${connections} connections, Node ${process.version}\n`);
  console.log('| run | req/s | ratio to baseline | p50 ms | p99 ms | CPU µs/req |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of results) {
    console.log(`| ${r.name} | ${Math.round(r.requests)} | ${(r.requests / base).toFixed(2)} | ${r.p50} | ${r.p99} | ${Math.round(r.cpuMicros)} |`);
  }
  console.log(`\nRSS after the runs: ${Math.round(process.memoryUsage().rss / 1024 / 1024)} MiB`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
