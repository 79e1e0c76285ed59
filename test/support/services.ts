// Suites that need a real service (PostgreSQL, Redis) run when it answers. When it does
// not, they fail under CI (CI must run them) and are skipped elsewhere, saying why.
import { describe, it } from 'vitest';

const inCI = Boolean(process.env.CI) && !['false', '0'].includes(process.env.CI!.toLowerCase());

export interface ServiceProbe {
  /** e.g. "PostgreSQL at postgres://…" */
  what: string;
  /** The variable that points the tests at another server. */
  variable: string;
  /** undefined when reachable, otherwise why not. */
  unreachableReason: string | undefined;
}

export function describeWithService(probe: ServiceProbe, name: string, fn: () => void): void {
  if (probe.unreachableReason === undefined) {
    describe(name, fn);
    return;
  }
  const why = `${probe.what} unreachable (${probe.unreachableReason})`;
  if (inCI) {
    describe(name, () => {
      it('requires its service (CI must run this suite)', () => {
        throw new Error(`${why}. CI must run this suite: start the service or set ${probe.variable}.`);
      });
    });
    return;
  }
  console.warn(`[${name}] skipped: ${why}; these run in CI (set ${probe.variable} to run them here)`);
  describe.skip(name, fn);
}
