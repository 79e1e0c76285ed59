// The fuzzer's awkward inputs include the ones that once got a 500, in the form the server
// really reads: cursors in the server's format holding dates the database cannot store,
// RFC 3339 dates no Date or no PostgreSQL column holds, NUL in HTTP Basic credentials, and
// arrays longer than PostgreSQL's bind-parameter limit that still fit the JSON limit.
import { describe, expect, it } from 'vitest';
import { routesById } from '../../generated/contract/routes.js';
import { encodeCursor } from '../../server/storage/pagination.js';
import { mutations } from '../support/fuzz/mutations.js';
import type { FuzzContext, RequestPlan } from '../support/fuzz/plan.js';
import { bodyBytes } from '../support/fuzz/plan.js';
import { FUZZ_LIMITS } from '../support/fuzz/platform.js';
import { seededRandom } from '../support/fuzz/random.js';
import { BAD_CURSORS, BAD_DATES, cursorOf } from '../support/fuzz/values.js';

const LEAP_SECOND = '2016-12-31T23:59:60Z';
const YEAR_ZERO = '0000-01-01T00:00:00Z';
const PARAMETER_LIMIT = 32_767;

const context: FuzzContext = { adminKey: 'sk_admin', knownIds: [], known: {}, disposable: {}, idempotencyKeys: ['k'], limits: FUZZ_LIMITS };
const mutation = (name: string) => mutations.find((m) => m.name === name)!;

/** A getItemsByProducer plan whose JSON body is one array, `ids`, of the given schema. */
const arrayPlan = (value: unknown[], schema: object): RequestPlan => ({
  route: routesById.getItemsByProducer,
  method: 'POST',
  parameters: [],
  extraQuery: [],
  headers: [],
  body: { kind: 'json', value: { ids: value }, nodes: [{ path: ['ids'], schema: { type: 'array', ...schema } }] },
});

/** Everything `name` does to `plan` over many seeds. */
function outcomes(name: string, plan: RequestPlan, runs = 400): RequestPlan[] {
  return Array.from({ length: runs }, (_, seed) => mutation(name).apply(plan, seededRandom(seed), context)[0]);
}

describe('fuzz inputs', () => {
  it('writes cursors in the server format', () => {
    const position = { createdAt: new Date('2024-05-01T12:00:00.000Z'), id: '00000000-0000-4000-8000-000000000000' };
    expect(cursorOf(position.createdAt.toISOString(), position.id)).toBe(encodeCursor(position));
  });

  it('has real-format cursors with a leap second and year 0', () => {
    const dates = BAD_CURSORS.map((c) => Buffer.from(c, 'base64url').toString('utf8').split('|')[0]);
    expect(dates).toEqual(expect.arrayContaining([LEAP_SECOND, YEAR_ZERO]));
  });

  it('has dates with a leap second and year 0', () => {
    expect(BAD_DATES).toEqual(expect.arrayContaining([LEAP_SECOND, YEAR_ZERO]));
  });

  it('sends NUL in HTTP Basic credentials, in the id and in the secret', () => {
    const plan: RequestPlan = { route: routesById.createOAuthToken, method: 'POST', parameters: [], extraQuery: [], headers: [], body: { kind: 'none' } };
    const basics = outcomes('bad-auth', plan)
      .flatMap((p) => p.headers.filter(([n, v]) => n === 'authorization' && v.startsWith('Basic ')))
      .map(([, v]) => Buffer.from(v.slice(6), 'base64').toString('utf8'));
    expect(basics.some((b) => b.split(':')[0].includes('\0'))).toBe(true);
    expect(basics.some((b) => b.split(':')[1]?.includes('\0'))).toBe(true);
  });

  it('sends an unbounded array longer than the bind-parameter limit, within the JSON limit', () => {
    const plan = arrayPlan(['00000000-0000-4000-8000-000000000000'], { items: { type: 'string', format: 'uuid' } });
    for (const huge of outcomes('huge-array', plan, 5)) {
      expect((huge.body as { value: { ids: unknown[] } }).value.ids.length).toBeGreaterThan(PARAMETER_LIMIT);
      expect(bodyBytes(huge.body)!.length).toBeLessThanOrEqual(FUZZ_LIMITS.jsonBody);
    }
  });

  it('sends a bounded array at its maxItems and one over', () => {
    const plan = arrayPlan(['a'], { maxItems: 100, items: { type: 'string' } });
    const lengths = new Set(outcomes('huge-array', plan, 50).map((p) => (p.body as { value: { ids: unknown[] } }).value.ids.length));
    expect([...lengths].sort()).toEqual([100, 101]);
  });
});
