// Prints the run's totals as one plain line ("N passed, N failed, N skipped") for tools that
// read a test run's closing line; vitest's own summary is formatted for people.
import { readFileSync } from 'node:fs';

const results = JSON.parse(readFileSync(process.argv[2], 'utf8'));
console.log(`${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests + results.numTodoTests} skipped`);
process.exit(results.success ? 0 : 1);
