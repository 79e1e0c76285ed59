// The hot counters of the billing gates, in Redis (REDIS_URL): a prepaid request's hold is
// one script on Redis instead of a database transaction. The database stays the truth:
// Redis keeps, per pool (an organization's credit, or one coding-agent plan), a copy of the
// pool's row stamped with the row's `version`, plus the open holds. A copy older than
// POOL_STALE_MS is read again; a change the server makes (settle, credit, cap, plan) is
// written to the copy with its new version, and a copy is never replaced by an older one.
//
// Why the overshoot bound holds across instances: every hold is checked and taken by one
// script (atomic in Redis) against the copy and every open hold, as the conditional UPDATE
// does in the database. Settling commits the charge in the database first, then one script
// drops the hold and installs the new copy; in between, the old copy still counts the hold,
// which holds at least the charge, so the gate errs on the safe side. Holds taken in the
// database (by an instance that could not reach Redis) are in the copy's `dbres`.
//
// Holds of dead processes (instances.ts) and holds older than RESERVATION_TTL_MS are dropped
// by the next script that reads the pool.
import type { Redis } from 'ioredis';
import { RESERVATION_TTL_MS } from './instances.js';
import { periodStart } from './pricing.js';
import type { PoolState } from './pools.js';

/** How old a pool copy may be before a hold reads the row again (changes made outside the server: at most this late). */
export const POOL_STALE_MS = 5_000;
/** Idle pools and hold lists are forgotten after a day (read again on the next request). */
const IDLE_MS = 24 * 60 * 60_000;

// KEYS[1] the pool copy; ARGV from 1: version, balance ('' for a plan), spent, period start
// (ms), period, database holds, cap ('' none), now (ms). An older version never replaces a newer one.
const INSTALL = `
local function install(pool, a)
  local v = redis.call('HGET', pool, 'v')
  if v and tonumber(v) > tonumber(a[1]) then return 0 end
  redis.call('HSET', pool, 'v', a[1], 'bal', a[2], 'spent', a[3], 'ps', a[4], 'per', a[5], 'dbres', a[6], 'cap', a[7], 'at', a[8])
  redis.call('PEXPIRE', pool, ${IDLE_MS})
  return 1
end
`;

const LOAD = `${INSTALL}
return install(KEYS[1], ARGV)`;

// KEYS: pool, holds; ARGV: hold id, then INSTALL's arguments. The settled hold goes, the new copy comes, at once.
const SETTLE = `${INSTALL}
redis.call('HDEL', KEYS[2], ARGV[1])
return install(KEYS[1], {unpack(ARGV, 2)})`;

// KEYS: pool, holds; ARGV: estimate, week start, month start, hold id, owner, now, stale ms,
// hold TTL ms, dead owners (comma-separated), whether the balance pays ('1'). Replies {'load'}, {'refused', version, held
// here}, or {'ok'}.
const RESERVE = `
local f = redis.call('HMGET', KEYS[1], 'v', 'bal', 'spent', 'ps', 'per', 'dbres', 'cap', 'at')
local now = tonumber(ARGV[6])
if not f[1] or now - tonumber(f[8]) > tonumber(ARGV[7]) then return {'load'} end
local dead = {}
for owner in string.gmatch(ARGV[9], '[^,]+') do dead[owner] = true end
local held = 0
local holds = redis.call('HGETALL', KEYS[2])
for i = 1, #holds, 2 do
  local estimate, owner, at = string.match(holds[i + 1], '^(%d+)|([^|]*)|(%d+)$')
  if dead[owner] or now - tonumber(at) > tonumber(ARGV[8]) then
    redis.call('HDEL', KEYS[2], holds[i])
  else
    held = held + tonumber(estimate)
  end
end
local estimate = tonumber(ARGV[1])
local current = (f[5] == 'week') and ARGV[2] or ARGV[3]
local spent = (f[4] == current) and tonumber(f[3]) or 0
local inFlight = tonumber(f[6]) + held
if f[7] ~= '' and spent + inFlight + estimate > tonumber(f[7]) then return {'refused', f[1], held} end
if f[2] ~= '' and ARGV[10] == '1' then
  local available = tonumber(f[2]) - inFlight
  if available <= 0 or available - estimate < 0 then return {'refused', f[1], held} end
end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[1] .. '|' .. ARGV[5] .. '|' .. ARGV[6])
redis.call('PEXPIRE', KEYS[2], ${IDLE_MS})
return {'ok'}
`;

export type HotReserve = { kind: 'ok' } | { kind: 'load' } | { kind: 'refused'; version: bigint; heldMicros: bigint };

export interface HotHold {
  organizationId: string;
  product: string | null;
  id: string;
  estimateMicros: bigint;
  /** The incarnation (instances.ts) that took it. */
  owner: string;
  createdAt: Date;
}

interface WithScripts {
  billingLoad(...args: (string | number)[]): Promise<number>;
  billingSettle(...args: (string | number)[]): Promise<number>;
  billingReserve(...args: (string | number)[]): Promise<[string, string?, number?]>;
}

/** Micro-dollars in Lua's doubles stay exact below 2^53 (about 9 billion dollars). */
const str = (n: bigint | null) => (n === null ? '' : n.toString());

export class RedisHolds {
  private readonly redis: Redis & WithScripts;

  constructor(redis: Redis) {
    redis.defineCommand('billingLoad', { numberOfKeys: 1, lua: LOAD });
    redis.defineCommand('billingSettle', { numberOfKeys: 2, lua: SETTLE });
    redis.defineCommand('billingReserve', { numberOfKeys: 2, lua: RESERVE });
    this.redis = redis as Redis & WithScripts;
  }

  /** Checks and takes a hold against the pool's copy and every open hold, in one script. */
  async reserve(hold: HotHold, deadOwners: readonly string[], debit: boolean): Promise<HotReserve> {
    const now = hold.createdAt.getTime();
    const reply = await this.redis.billingReserve(
      ...keysOf(hold.organizationId, hold.product),
      hold.estimateMicros.toString(),
      periodStart('week', hold.createdAt).getTime(),
      periodStart('month', hold.createdAt).getTime(),
      hold.id,
      hold.owner,
      now,
      POOL_STALE_MS,
      RESERVATION_TTL_MS,
      deadOwners.join(','),
      debit ? '1' : '0',
    );
    if (reply[0] === 'ok') return { kind: 'ok' };
    if (reply[0] === 'load') return { kind: 'load' };
    return { kind: 'refused', version: BigInt(reply[1]!), heldMicros: BigInt(reply[2]!) };
  }

  /** Installs the pool's row as read from (or just written to) the database, unless a newer copy is there. */
  async install(organizationId: string, product: string | null, state: PoolState): Promise<void> {
    await this.redis.billingLoad(keysOf(organizationId, product)[0], ...installArgs(state));
  }

  /** After the charge is committed: drops the hold and installs the row the settlement wrote. */
  async settle(hold: Pick<HotHold, 'organizationId' | 'product' | 'id'>, state: PoolState): Promise<void> {
    await this.redis.billingSettle(...keysOf(hold.organizationId, hold.product), hold.id, ...installArgs(state));
  }

  /** What the open holds of a pool hold (for the billing overview), dead owners' and expired ones left out. */
  async held(organizationId: string, product: string | null, deadOwners: readonly string[]): Promise<bigint> {
    const holds = await this.redis.hgetall(keysOf(organizationId, product)[1]);
    const now = Date.now();
    let total = 0n;
    for (const value of Object.values(holds)) {
      const [estimate, owner, at] = value.split('|');
      if (!deadOwners.includes(owner) && now - Number(at) <= RESERVATION_TTL_MS) total += BigInt(estimate);
    }
    return total;
  }
}

/** One hash tag per organization: a pool and its holds live in one Redis Cluster slot. */
function keysOf(organizationId: string, product: string | null): [string, string] {
  const pool = `billing:{${organizationId}}:${product === null ? 'credit' : `plan:${product}`}`;
  return [pool, `${pool}:holds`];
}

function installArgs(state: PoolState): string[] {
  return [
    state.version.toString(),
    str(state.balanceMicros),
    state.spentMicros.toString(),
    String(state.periodStart.getTime()),
    state.period,
    state.reservedMicros.toString(),
    str(state.capMicros),
    String(Date.now()),
  ];
}
