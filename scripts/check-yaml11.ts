// openapi.yaml must load in YAML 1.1 parsers too (openapi-generator and others through
// SnakeYAML, PyYAML). `yaml` parses it as 1.1, strictly; and because it is more lenient
// than those parsers in one place they reject, that place is checked here by hand: their
// scanners end a plain scalar inside a flow collection at `?`, so `[What now?, x]` fails.
//
//   npx tsx scripts/check-yaml11.ts [file]    exit 1 and list the problems, if any
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isCollection, LineCounter, parseDocument, visit, type Scalar } from 'yaml';

export function yaml11Problems(text: string): string[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { version: '1.1', strict: true, uniqueKeys: true, lineCounter });
  const problems = [...doc.errors, ...doc.warnings].map((e) => e.message);
  const at = (node: Scalar) => {
    const { line, col } = lineCounter.linePos(node.range?.[0] ?? 0);
    return `line ${line}, column ${col}`;
  };
  visit(doc, {
    Scalar(_key, node, path) {
      const inFlow = path.some((ancestor) => isCollection(ancestor) && ancestor.flow);
      const text = String(node.source ?? node.value);
      if (inFlow && node.type === 'PLAIN' && text.includes('?')) {
        problems.push(`${at(node)}: unquoted "?" in a flow collection (quote "${text}")`);
      }
    },
  });
  return problems;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2] ?? resolve(fileURLToPath(import.meta.url), '../../openapi.yaml');
  const problems = yaml11Problems(readFileSync(file, 'utf8'));
  for (const problem of problems) console.error(`${file}: ${problem}`);
  process.exit(problems.length > 0 ? 1 : 0);
}
