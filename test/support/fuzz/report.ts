// The campaign summary printed by `npm run fuzz`: requests by operation and status, then
// findings grouped by what is wrong, each with the operations it affects and one request.
import type { Finding, FuzzResult } from './run.js';

function statusTable(result: FuzzResult): string[] {
  const lines = ['Requests by operation and status:'];
  const width = Math.max(...[...result.statuses.keys()].map((id) => id.length));
  const total = new Map<string, number>();
  for (const [operationId, counts] of [...result.statuses].sort(([a], [b]) => a.localeCompare(b))) {
    const cells = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([status, n]) => `${status}×${n}`);
    for (const [status, n] of counts) total.set(status, (total.get(status) ?? 0) + n);
    lines.push(`  ${operationId.padEnd(width)}  ${cells.join('  ')}`);
  }
  lines.push(`  ${'all'.padEnd(width)}  ${[...total].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}×${n}`).join('  ')}`);
  return lines;
}

function findingGroups(findings: Finding[]): string[] {
  if (findings.length === 0) return ['No findings.'];
  const groups = new Map<string, Finding[]>();
  for (const f of findings) {
    const key = `${f.rule} ${f.subject}`;
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const lines = [`Findings (${findings.length} distinct, ${groups.size} groups):`];
  for (const [key, group] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const count = group.reduce((n, f) => n + f.count, 0);
    const where = group.map((f) => `${f.operationId}${f.status === null ? '' : ` ${f.status}`}`);
    lines.push(`  ${key}  (${count} responses)`);
    lines.push(`    operations: ${where.join(', ')}`);
    lines.push(`    e.g. ${group[0].example}`);
    lines.push(`         ${group[0].message.slice(0, 240)}`);
  }
  return lines;
}

export function formatSummary(result: FuzzResult, seed: number): string {
  const rate = Math.round(result.sent / (result.durationMs / 1000));
  return [`Fuzzed ${result.sent} requests with seed ${seed} in ${(result.durationMs / 1000).toFixed(1)} s (${rate}/s).`, '', ...statusTable(result), '', ...findingGroups(result.findings)].join('\n');
}
