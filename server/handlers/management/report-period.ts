// The `[since, until)` of a management report: both optional, `since` before `until`.
import { ApiError } from '../../errors.js';

export function reportPeriod(query: { since?: number; until?: number }, defaultSince: (until: number) => number): { since: number; until: number } {
  const until = query.until ?? Date.now();
  const since = query.since ?? defaultSince(until);
  if (since >= until) {
    throw new ApiError('VALIDATION_ERROR', '`since` must be before `until`', {
      gatewayCode: 'validation_error',
      issues: [{ loc: ['query', 'since'], msg: 'Must be before until', type: 'value_error', input: since }],
    });
  }
  return { since, until };
}
