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

/**
 * Self time as shares of busy time (idle and the profiler's own inspector dispatch left
 * out). Time in natives (JSON.parse, writev, …) and WebAssembly is charged to the nearest
 * JavaScript caller's file, so that PGlite's Postgres or undici's llhttp count as theirs.
 * `requests`: how many requests the profile covers, to print µs per request beside shares.
 */
export function summarize(profile: CpuProfile, requests: number): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const fileOf = (id: number): string => {
    const { url, functionName } = byId.get(id)!.callFrame;
    if (url && !url.startsWith('wasm://')) return where(url);
    const up = parent.get(id);
    return up === undefined || byId.get(up)!.callFrame.functionName === '(root)' ? functionName : fileOf(up);
  };
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byComponent = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, time: number) => map.set(key, (map.get(key) ?? 0) + time);
  let busy = 0;
  for (const [id, time] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const file = fileOf(id);
    if (functionName === '(idle)' || file === 'node:inspector') continue;
    busy += time;
    add(byFile, file, time);
    add(byComponent, COMPONENTS.find(([, pattern]) => pattern.test(file))?.[0] ?? 'other packages', time);
    const native = url.startsWith('wasm://') ? 'wasm, ' : url ? '' : 'native, ';
    add(byFunction, `${functionName || '(anonymous)'} (${native}${file}${url && !native ? `:${lineNumber + 1}` : ''})`, time);
  }
  const table = (title: string, map: Map<string, number>, n: number) =>
    `| ${title} | share | µs/req |\n|---|---:|---:|\n` +
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, t]) => `| ${name} | ${((100 * t) / busy).toFixed(1)}% | ${Math.round(t / requests)} |`)
      .join('\n');
  return (
    `Busy ${(busy / 1e6).toFixed(1)} s of CPU in the profile, ${Math.round(busy / requests)} µs per request; self time:\n\n` +
    `${table('component', byComponent, 12)}\n\n${table('file or package', byFile, 20)}\n\n${table('function', byFunction, 25)}`
  );
}

/** A profile URL as a package (node_modules), a file of ours, or a Node internal. */
function where(url: string): string {
  const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  return url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
}
