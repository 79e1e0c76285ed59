// Per-call overhead of the SDK: the same calls made with raw `fetch`, with
// @inference-platform/sdk and with openai-node, against a local server (a child process,
// so its CPU is not counted here) that answers at once with a canned body. The
// difference to raw fetch is what the client library adds per call.
// Usage: npm run bench:sdk [-- calls-per-round] (builds the SDK first: what is measured is
// the published bundle, sdk/dist, as a user imports it, not the TypeScript sources).
//
// Rounds interleave the clients (raw, sdk, openai, raw, ...) so drift hits all alike; a
// figure is the median over rounds of the mean per call. Wall µs: latency of one call made
// after the other (one connection, keep-alive). CPU µs: this process's user+system time
// per call (the client's own work, with its fetch). On a busy machine wall time carries
// everyone's scheduling delays: then read the CPU columns, and the second table, where
// `fetch` answers in-process with a ready Response (no network, no other process), so
// the difference is the client library's own work alone.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { VERSION as OPENAI_VERSION } from 'openai/version';
import { againstTarget, median, signed } from './figures.js';
import type * as Sdk from '../sdk/src/index.js';

// The built bundle (sdk/dist, which `npm run bench:sdk` builds first), typed by its sources: a
// fresh clone typechecks before anything is built, so the package is loaded at run time.
const PACKAGE = '@inference-platform/sdk';
const { Platform } = (await import(PACKAGE)) as typeof Sdk;

const CALLS = Number(process.argv[2] ?? 500);
const ROUNDS = 7;
const TARGET_US = 100;

const completion = {
  id: 'chatcmpl_bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'local-chat',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hope is the confident expectation of good to come.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 11, total_tokens: 23 },
};
const chunk = (content: string, finish: string | null) => ({
  id: 'chatcmpl_bench',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'local-chat',
  choices: [{ index: 0, delta: { content }, finish_reason: finish }],
});
const words = ['Hope ', 'is ', 'the ', 'confident ', 'expectation.'];
const sse = `${words.map((w, i) => `data: ${JSON.stringify(chunk(w, i === words.length - 1 ? 'stop' : null))}\n\n`).join('')}data: [DONE]\n\n`;
const models = { object: 'list', data: [{ id: 'local-chat', object: 'model', created: 1, owned_by: 'local' }] };

/** The server, run in a child process: any GET answers the model list, any POST a completion (streamed when asked). */
async function serve(): Promise<void> {
  const http = await import('node:http');
  const json = JSON.stringify(completion);
  const list = JSON.stringify(models);
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const base = { 'x-trace-id': 'trc_00000000000000000000000000000000' };
      if (req.method === 'GET') {
        res.writeHead(200, { ...base, 'content-type': 'application/json' });
        res.end(list);
      } else if (Buffer.concat(parts).includes('"stream":true')) {
        res.writeHead(200, { ...base, 'content-type': 'text/event-stream' });
        res.end(sse);
      } else {
        res.writeHead(200, { ...base, 'content-type': 'application/json' });
        res.end(json);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send!(typeof address === 'object' && address ? address.port : 0);
  });
}

interface Client {
  name: string;
  chat(): Promise<unknown>;
  stream(): Promise<unknown>;
  list(): Promise<unknown>;
}

type Shape = 'chat' | 'stream' | 'list';
const SHAPES: Array<[Shape, string]> = [
  ['chat', 'chat completion (JSON)'],
  ['stream', 'chat completion stream (5 chunks, read to the end)'],
  ['list', 'models list (GET)'],
];

async function measure(call: () => Promise<unknown>, calls: number): Promise<{ wall: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await call();
  const wall = Number(process.hrtime.bigint() - start) / 1000 / calls;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / calls };
}


async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve(Number(message)));
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const key = 'sk_bench';
  const body = { model: 'local-chat', messages: [{ role: 'user' as const, content: 'What is hope?' }] };

  const raw: Client = {
    name: 'raw fetch',
    chat: async () => {
      const res = await fetch(`${url}/ai/v2/guarded/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return res.json();
    },
    stream: async () => {
      const res = await fetch(`${url}/ai/v2/guarded/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ ...body, stream: true }),
      });
      // The least a caller does with a stream: read it and parse each event's JSON.
      const text = await res.text();
      let content = '';
      for (const line of text.split('\n')) {
        if (line.startsWith('data: {')) content += JSON.parse(line.slice(6)).choices[0].delta.content ?? '';
      }
      return content;
    },
    list: async () => (await fetch(`${url}/ai/v2/models`, { headers: { authorization: `Bearer ${key}` } })).json(),
  };

  const platform = new Platform({ apiKey: key, baseUrl: url });
  const sdk: Client = {
    name: '@inference-platform/sdk',
    chat: () => platform.chat.completions.create(body),
    stream: async () => (await platform.chat.completions.create({ ...body, stream: true })).finalText(),
    list: () => platform.models.list(),
  };

  // Looked up per call, as the other two do (the in-process table swaps the global fetch).
  const openai = new OpenAI({ apiKey: key, baseURL: `${url}/ai/v2`, fetch: (input, init) => globalThis.fetch(input, init) });
  const oai: Client = {
    name: `openai ${OPENAI_VERSION}`,
    chat: () => openai.chat.completions.create(body),
    stream: async () => {
      let content = '';
      for await (const part of await openai.chat.completions.create({ ...body, stream: true })) content += part.choices[0]?.delta.content ?? '';
      return content;
    },
    list: () => openai.models.list(),
  };

  const clients = [raw, sdk, oai];
  // Warm-up: connections, JIT.
  for (const client of clients) for (const [shape] of SHAPES) for (let i = 0; i < 300; i++) await client[shape]();
  const network = await rounds(clients);
  child.kill();
  report(`Against a local server (child process): ${CALLS} calls per round, ${ROUNDS} rounds (median), one call at a time`, network, clients, true);

  // The same calls with `fetch` answering at once in this process: the libraries' own CPU.
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init);
    if (request.method === 'GET') return new Response(JSON.stringify(models), { headers: { 'content-type': 'application/json' } });
    const streamed = (await request.text()).includes('"stream":true');
    return new Response(streamed ? sse : JSON.stringify(completion), { headers: { 'content-type': streamed ? 'text/event-stream' : 'application/json' } });
  };
  try {
    for (const client of clients) for (const [shape] of SHAPES) for (let i = 0; i < 1000; i++) await client[shape]();
    report(`In-process fetch (no network): ${CALLS * 4} calls per round, ${ROUNDS} rounds (median)`, await rounds(clients, CALLS * 4), clients, false);
  } finally {
    globalThis.fetch = realFetch;
  }
}

async function rounds(clients: Client[], calls = CALLS): Promise<Map<string, { wall: number[]; cpu: number[] }>> {

  const samples = new Map<string, { wall: number[]; cpu: number[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [shape] of SHAPES) {
      for (const client of clients) {
        const { wall, cpu } = await measure(() => client[shape](), calls);
        const key = `${shape}|${client.name}`;
        const entry = samples.get(key) ?? { wall: [], cpu: [] };
        entry.wall.push(wall);
        entry.cpu.push(cpu);
        samples.set(key, entry);
      }
    }
  }
  return samples;
}

function report(title: string, samples: Map<string, { wall: number[]; cpu: number[] }>, clients: Client[], wallToo: boolean): void {
  const [raw, ...libraries] = clients as [Client, ...Client[]];
  console.log(`\n${title}, Node ${process.version}\n`);
  console.log('| call | client | wall µs/call | added over raw fetch | CPU µs/call | added CPU over raw fetch |');
  console.log('|---|---|---:|---:|---:|---:|');
  const overheads: string[] = [];
  for (const [shape, label] of SHAPES) {
    const base = samples.get(`${shape}|${raw.name}`)!;
    const baseWall = median(base.wall);
    const baseCpu = median(base.cpu);
    const added: string[] = [];
    for (const client of clients) {
      const s = samples.get(`${shape}|${client.name}`)!;
      const wall = median(s.wall);
      const cpu = median(s.cpu);
      const addedWall = client === raw ? '' : signed(wall - baseWall);
      const addedCpu = client === raw ? '' : signed(cpu - baseCpu);
      console.log(`| ${label} | ${client.name} | ${Math.round(wall)} | ${addedWall} | ${Math.round(cpu)} | ${addedCpu} |`);
      if (client !== raw) added.push(againstTarget(wallToo ? wall - baseWall : cpu - baseCpu, TARGET_US));
    }
    overheads.push(`| ${label} | ${added.join(' | ')} |`);
  }
  // The libraries side by side, each figure judged against the 0.1 ms per-call target.
  console.log(`\nAdded over raw fetch, ${wallToo ? 'wall time' : 'CPU'} per call (target: at most ${TARGET_US} µs = 0.1 ms):\n`);
  console.log(`| call | ${libraries.map((c) => c.name).join(' | ')} |`);
  console.log(`|---|${libraries.map(() => '---:|').join('')}`);
  for (const line of overheads) console.log(line);
}

if (process.argv.includes('--serve')) {
  void serve();
} else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
