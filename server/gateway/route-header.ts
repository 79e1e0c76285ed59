// The route an answer took, told to the caller in one header: each upstream attempt in
// order, with its model, deployment and outcome (`ok`, or how it failed). A stream's header
// leaves with its first event, so it tells the attempts up to then; a stream resumed later
// names who finished it on its finish chunk.
import type { Attempt } from './upstream-call.js';

export const ROUTE_HEADER = 'X-Gateway-Route';

/** `model=m; deployment=d; outcome=unavailable, model=f; deployment=e; outcome=ok` (catalog ids hold none of `=;, `). */
export function routeHeader(attempts: readonly Attempt[]): Record<string, string> {
  return { [ROUTE_HEADER]: routeOf(attempts) };
}

/** The header's value; also what the request log keeps for an answer that could not carry it (an error). */
export function routeOf(attempts: readonly { modelId: string; deploymentId: string; outcome: string }[]): string {
  return attempts.map((a) => `model=${a.modelId}; deployment=${a.deploymentId}; outcome=${a.outcome}`).join(', ');
}
