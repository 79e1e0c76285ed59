// Where a V8 CPU profile's time goes, by pipeline component, file (or package) and function:
// the --profile mode of bench/gateway.ts.

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Coarse components of the pipeline, by the file (or package) a sample's time is charged to. */
const COMPONENTS: [string, RegExp][] = [
  ['database (PGlite, Prisma)', /^(@electric-sql\/pglite|@prisma\/|pglite-prisma-adapter|pg|pg-protocol)\b/],
  ['contract validation (express-openapi-validator, ajv)', /^(express-openapi-validator|ajv|ajv-formats)\b/],
  ['Express and its middleware', /^(express|router|body-parser|type-is|content-type|raw-body|path-to-regexp|finalhandler|send|mime-types|accepts|negotiator|qs|iconv-lite|on-finished|etag|fresh)\b/],
  ['undici (upstream calls)', /^undici\b/],
  ['pino (logging)', /^(pino|@pinojs\/)/],
  ['metrics (prom-client)', /^prom-client\b/],
  ['our code', /^(server|generated|test|mocks)\//],
  ['Node core (http, net, streams, async hooks)', /^node:/],
  ['GC and V8', /^\(/],
];

/** V8's sampling heap profile: a call tree whose nodes carry the bytes allocated in them. */
export interface AllocationProfile {
  head: AllocationNode;
}
interface AllocationNode {
  id: number;
  callFrame: CpuProfile['nodes'][number]['callFrame'];
  selfSize: number;
  children: AllocationNode[];
}

/**
 * Self time as shares of busy time (idle and the profiler's own inspector dispatch left
 * out). Time in natives (JSON.parse, writev, …) and WebAssembly is charged to the nearest
 * JavaScript caller's file, so that PGlite's Postgres or undici's llhttp count as theirs.
 * `requests`: how many requests the profile covers, to print µs per request beside shares.
 */
export function summarize(profile: CpuProfile, requests: number): string {
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const { total, tables } = breakdown(profile.nodes, self, requests, 'µs/req');
  return `Busy ${(total / 1e6).toFixed(1)} s of CPU in the profile, ${Math.round(total / requests)} µs per request; self time:\n\n${tables}`;
}

/** Bytes allocated (garbage included) by component, file and function, per request. */
export function summarizeAllocations(profile: AllocationProfile, requests: number): string {
  const nodes: CpuProfile['nodes'] = [];
  const self = new Map<number, number>();
  const visit = (node: AllocationNode) => {
    nodes.push({ id: node.id, callFrame: node.callFrame, children: node.children.map((child) => child.id) });
    self.set(node.id, node.selfSize);
    node.children.forEach(visit);
  };
  visit(profile.head);
  const { total, tables } = breakdown(nodes, self, requests, 'bytes/req');
  return `${(total / 2 ** 20).toFixed(0)} MiB allocated in the profile, ${Math.round(total / requests)} bytes per request (sampled); by allocation site:\n\n${tables}`;
}

function breakdown(nodes: CpuProfile['nodes'], self: Map<number, number>, requests: number, unit: string) {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const fileOf = (id: number): string => {
    const { url, functionName } = byId.get(id)!.callFrame;
    if (url && !url.startsWith('wasm://')) return where(url);
    const up = parent.get(id);
    return up === undefined || byId.get(up)!.callFrame.functionName === '(root)' ? functionName : fileOf(up);
  };
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byComponent = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, amount: number) => map.set(key, (map.get(key) ?? 0) + amount);
  let total = 0;
  for (const [id, amount] of self) {
    if (amount === 0) continue;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const file = fileOf(id);
    if (functionName === '(idle)' || file === 'node:inspector') continue;
    total += amount;
    add(byFile, file, amount);
    add(byComponent, COMPONENTS.find(([, pattern]) => pattern.test(file))?.[0] ?? 'other packages', amount);
    const native = url.startsWith('wasm://') ? 'wasm, ' : url ? '' : 'native, ';
    add(byFunction, `${functionName || '(anonymous)'} (${native}${file}${url && !native ? `:${lineNumber + 1}` : ''})`, amount);
  }
  const table = (title: string, map: Map<string, number>, n: number) =>
    `| ${title} | share | ${unit} |\n|---|---:|---:|\n` +
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, amount]) => `| ${name} | ${((100 * amount) / total).toFixed(1)}% | ${Math.round(amount / requests)} |`)
      .join('\n');
  return { total, tables: `${table('component', byComponent, 12)}\n\n${table('file or package', byFile, 20)}\n\n${table('function', byFunction, 25)}` };
}

/** A profile URL as a package (node_modules), a file of ours, or a Node internal. */
function where(url: string): string {
  const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  return url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
}
