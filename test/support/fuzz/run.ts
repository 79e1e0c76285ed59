// Runs a seeded fuzz campaign against a running platform and collects what is wrong:
// 5xx answers, errors without a trace id, answers the contract does not describe,
// requests that get no answer, and a platform that stops answering afterwards.
import { routes, type OperationId } from '../../../generated/contract/routes.js';
import { stubbedOperations } from '../../../server/http/not-implemented.js';
import { conformanceProblems } from '../conformance.js';
import { mutations } from './mutations.js';
import { bodyBytes, targetOf, validPlan, type RequestPlan } from './plan.js';
import type { FuzzTarget } from './platform.js';
import { seededRandom } from './random.js';
import { isConnectionReset, send, type WireResponse } from './send.js';

/** A generated request and what was done to the valid one. */
export interface FuzzCase {
  index: number;
  /** `valid`, or the mutation's name. */
  mutation: string;
  detail: string;
  plan: RequestPlan;
}

export interface Finding {
  operationId: OperationId;
  rule: string;
  subject: string;
  /** null when no answer came. */
  status: number | null;
  message: string;
  /** The first request that showed it (replay it with `npm run fuzz -- --seed S --replay <index>`). */
  example: string;
  count: number;
}

export interface FuzzResult {
  sent: number;
  /** Requests per operation and status ('none' when no answer came). */
  statuses: Map<OperationId, Map<string, number>>;
  findings: Finding[];
  durationMs: number;
}

export interface FuzzOptions {
  requests: number;
  seed: number;
  concurrency?: number;
  timeoutMs?: number;
}

/** Share of requests sent unchanged: the happy path must conform too. */
const VALID_SHARE = 0.2;

/**
 * Request `index` of a campaign: operations in turn, each request from its own PRNG, so
 * any single request can be rebuilt from (seed, index) alone. The first round is each
 * operation's canonical request, so every one is seen succeeding at least once.
 */
export function fuzzCase(seed: number, index: number, context: FuzzTarget['context']): FuzzCase {
  const random = seededRandom(Math.imul(seed, 0x9e3779b1) ^ index);
  const route = routes[index % routes.length];
  if (index < routes.length) return { index, mutation: 'canonical', detail: '', plan: validPlan(route, random, context, true) };
  const plan = validPlan(route, random, context);
  if (random.chance(VALID_SHARE)) return { index, mutation: 'valid', detail: '', plan };
  const mutation = random.pick(mutations.filter((m) => m.applies(plan)));
  const [mutated, detail] = mutation.apply(plan, random, context);
  return { index, mutation: mutation.name, detail, plan: mutated };
}

export function describeCase(c: FuzzCase): string {
  const target = targetOf(c.plan);
  return `#${c.index} ${c.plan.method} ${target.length > 100 ? `${target.slice(0, 100)}…` : target} [${c.mutation}${c.detail ? `: ${c.detail}` : ''}]`;
}

/** Sends a case; one that loses its connection is sent once more on a new one, and only a second loss is a finding. */
export async function sendCase(target: FuzzTarget, c: FuzzCase, timeoutMs: number): Promise<WireResponse> {
  const base = c.plan.route.api === 'management' ? target.platform.mgmtUrl : target.platform.apiUrl;
  const request = { method: c.plan.method, url: base + targetOf(c.plan), headers: c.plan.headers, body: bodyBytes(c.plan.body) };
  return send(request, timeoutMs).catch((error: unknown) => {
    if (!isConnectionReset(error)) throw error;
    return send(request, timeoutMs, true);
  });
}

/** The cause the server logged for a 5xx, found by the answer's trace id. */
function loggedCause(target: FuzzTarget, response: WireResponse): string {
  const traceId = response.headers['x-trace-id']?.[0];
  const line = traceId && target.platform.logs.find((l) => l.includes(traceId) && l.includes('"level":50'));
  if (!line) return '';
  const entry = JSON.parse(line);
  return `logged ${JSON.stringify(entry.err ?? entry.msg).slice(0, 200)}: `;
}

/** What is wrong with one answer, as (rule, subject, message). */
function judge(target: FuzzTarget, c: FuzzCase, response: WireResponse): { rule: string; subject: string; message: string }[] {
  const { status } = response;
  const stub = status === 501 && stubbedOperations().includes(c.plan.route.operationId);
  const expected503 = status === 503 && target.dependenciesUnavailable && c.plan.route.errorBodies[503] !== undefined;
  const problems: { rule: string; subject: string; message: string }[] = [];
  if (status >= 500 && !stub && !expected503) {
    problems.push({ rule: 'server-error', subject: String(status), message: `${loggedCause(target, response)}${response.body.toString().slice(0, 200)}` });
  }
  const conformance = conformanceProblems(c.plan.route.operationId, { method: c.plan.method }, { ...response, body: response.body.toString() });
  // A stub's 501 is the scaffold's documented answer until the operation is implemented.
  return [...problems, ...conformance.filter((p) => !(stub && p.rule === 'status'))];
}

export async function runFuzz(target: FuzzTarget, options: FuzzOptions): Promise<FuzzResult> {
  const { requests, seed, concurrency = 8, timeoutMs = 20_000 } = options;
  const started = Date.now();
  const statuses = new Map<OperationId, Map<string, number>>();
  const findings = new Map<string, Finding>();
  const record = (c: FuzzCase, status: number | null, rule: string, subject: string, message: string) => {
    const key = [c.plan.route.operationId, rule, subject, status].join('|');
    const known = findings.get(key);
    if (known) known.count++;
    else findings.set(key, { operationId: c.plan.route.operationId, rule, subject, status, message, example: describeCase(c), count: 1 });
  };

  let next = 0;
  const worker = async () => {
    for (let index = next++; index < requests; index = next++) {
      const c = fuzzCase(seed, index, target.context);
      const counts = statuses.get(c.plan.route.operationId) ?? new Map<string, number>();
      statuses.set(c.plan.route.operationId, counts);
      try {
        const response = await sendCase(target, c, timeoutMs);
        counts.set(String(response.status), (counts.get(String(response.status)) ?? 0) + 1);
        for (const p of judge(target, c, response)) record(c, response.status, p.rule, p.subject, p.message);
      } catch (error) {
        counts.set('none', (counts.get('none') ?? 0) + 1);
        record(c, null, 'no-answer', (error as Error).message, (error as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));

  // The platform must still answer after all of that.
  const health = await send(
    { method: 'GET', url: `${target.platform.mgmtUrl}/api/v1/health`, headers: [['authorization', `Bearer ${target.context.adminKey}`]] },
    timeoutMs,
  ).catch((error: Error) => ({ status: 0, body: Buffer.from(error.message) }));
  if (health.status !== 200) {
    findings.set('health', {
      operationId: 'getHealth',
      rule: 'unhealthy-after',
      subject: String(health.status),
      status: health.status,
      message: health.body.toString().slice(0, 200),
      example: 'GET /api/v1/health after the campaign',
      count: 1,
    });
  }
  return { sent: requests, statuses, findings: [...findings.values()], durationMs: Date.now() - started };
}
