// Contract fuzzing on demand: `npm run fuzz -- --requests N --seed S [--postgres URL]`
// starts the platform in-process (PGlite, or an empty PostgreSQL database at URL), sends N
// seeded valid and invalid requests and prints what came back and what was wrong.
// `--replay I` sends request I of the seed alone and prints it with its answer.
import { parseArgs } from 'node:util';
import { bodyBytes } from '../test/support/fuzz/plan.js';
import { startFuzzTarget } from '../test/support/fuzz/platform.js';
import { formatSummary } from '../test/support/fuzz/report.js';
import { describeCase, fuzzCase, runFuzz, sendCase } from '../test/support/fuzz/run.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    seed: { type: 'string', default: '1' },
    postgres: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    replay: { type: 'string' },
  },
});
const seed = Number(values.seed);
let failed = false;
const target = await startFuzzTarget(values.postgres ? { databaseUrl: values.postgres } : {});
try {
  if (values.replay !== undefined) {
    const c = fuzzCase(seed, Number(values.replay), target.context);
    console.log(describeCase(c), '\n', c.plan.headers.map(([n, v]) => `${n}: ${v.slice(0, 120)}`).join('\n '));
    console.log(bodyBytes(c.plan.body)?.toString().slice(0, 2_000) ?? '(no body)');
    const response = await sendCase(target, c, 20_000);
    console.log(`\n${response.status}`, response.headers, '\n', response.body.toString().slice(0, 2_000));
  } else {
    const result = await runFuzz(target, { requests: Number(values.requests), seed, concurrency: Number(values.concurrency) });
    console.log(formatSummary(result, seed));
    failed = result.findings.length > 0;
  }
} finally {
  await target.platform.close();
}
// Explicitly: under the tsx CLI a process.exitCode set here does not reach the shell.
process.exit(failed ? 1 : 0);
