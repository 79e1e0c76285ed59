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
//
// A limited key (pools.ts) has a copy of its own pool beside the organization's credit, in
// the same hash tag; its holds are the credit's holds that name the key, so one script checks
// and takes both, and settling drops the hold and installs both new copies at once.
import type { Redis } from 'ioredis';
import { RESERVATION_TTL_MS } from './instances.js';
import { periodStart } from './pricing.js';
import type { PoolState } from './pools.js';

/** How old a pool copy may be before a hold reads the row again (changes made outside the server: at most this late). */
export const POOL_STALE_MS = 5_000;
/** Idle pools and hold lists are forgotten after a day (read again on the next request). */
const IDLE_MS = 24 * 60 * 60_000;

// KEYS[1] the pool copy; ARGV from 1: version, balance ('' for a plan or a key), spent, period
// start (ms), period, database holds, cap ('' none), now (ms), a key's credit share ('' none).
// An older version never replaces a newer one.
const INSTALL = `
local function install(pool, a)
  local v = redis.call('HGET', pool, 'v')
  if v and tonumber(v) > tonumber(a[1]) then return 0 end
  redis.call('HSET', pool, 'v', a[1], 'bal', a[2], 'spent', a[3], 'ps', a[4], 'per', a[5], 'dbres', a[6], 'cap', a[7], 'at', a[8], 'share', a[9])
  redis.call('PEXPIRE', pool, ${IDLE_MS})
  return 1
end
`;

/** How many arguments INSTALL takes. */
const INSTALL_ARGS = 9;

const LOAD = `${INSTALL}
return install(KEYS[1], ARGV)`;

// KEYS: pool, holds, key pool; ARGV: hold id, INSTALL's arguments, then the key pool's (none
// for a hold without a key pool). The settled hold goes, the new copies come, at once.
const SETTLE = `${INSTALL}
redis.call('HDEL', KEYS[2], ARGV[1])
if #ARGV > ${1 + INSTALL_ARGS} then install(KEYS[3], {unpack(ARGV, ${2 + INSTALL_ARGS})}) end
return install(KEYS[1], {unpack(ARGV, 2, ${1 + INSTALL_ARGS})})`;

// KEYS: pool, holds, key pool; ARGV: estimate, week start, month start, hold id, owner, now,
// stale ms, hold TTL ms, dead owners (comma-separated), whether the balance pays ('1'), the
// limited key ('' none). A hold is 'estimate|owner|taken at|key'. Replies {'load'},
// {'refused', version, held here}, {'refused_key', key pool version, the key's holds here},
// or {'ok'}.
const RESERVE = `
local f = redis.call('HMGET', KEYS[1], 'v', 'bal', 'spent', 'ps', 'per', 'dbres', 'cap', 'at')
local now = tonumber(ARGV[6])
if not f[1] or now - tonumber(f[8]) > tonumber(ARGV[7]) then return {'load'} end
local key = ARGV[11]
local k
if key ~= '' then
  k = redis.call('HMGET', KEYS[3], 'v', 'spent', 'ps', 'dbres', 'cap', 'share', 'at')
  if not k[1] or now - tonumber(k[7]) > tonumber(ARGV[7]) then return {'load'} end
end
local dead = {}
for owner in string.gmatch(ARGV[9], '[^,]+') do dead[owner] = true end
local held = 0
local keyHeld = 0
local holds = redis.call('HGETALL', KEYS[2])
for i = 1, #holds, 2 do
  local estimate, owner, at, holder = string.match(holds[i + 1], '^(%d+)|([^|]*)|(%d+)|?([^|]*)$')
  if dead[owner] or now - tonumber(at) > tonumber(ARGV[8]) then
    redis.call('HDEL', KEYS[2], holds[i])
  else
    held = held + tonumber(estimate)
    if key ~= '' and holder == key then keyHeld = keyHeld + tonumber(estimate) end
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
if k then
  local used = ((k[3] == ARGV[2]) and tonumber(k[2]) or 0) + tonumber(k[4]) + keyHeld + estimate
  if k[5] ~= '' and used > tonumber(k[5]) then return {'refused_key', k[1], keyHeld} end
  if k[6] ~= '' and ARGV[10] == '1' and used * 100 > tonumber(k[6]) * (tonumber(f[2]) + spent) then return {'refused_key', k[1], keyHeld} end
end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[1] .. '|' .. ARGV[5] .. '|' .. ARGV[6] .. '|' .. key)
redis.call('PEXPIRE', KEYS[2], ${IDLE_MS})
return {'ok'}
`;

export type HotReserve = { kind: 'ok' } | { kind: 'load' } | { kind: 'refused' | 'refused_key'; version: bigint; heldMicros: bigint };

export interface HotHold {
  organizationId: string;
  product: string | null;
  id: string;
  estimateMicros: bigint;
  /** A limited key whose pool the hold counts on too; null: none. */
  limitedKey: string | null;
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
    redis.defineCommand('billingSettle', { numberOfKeys: 3, lua: SETTLE });
    redis.defineCommand('billingReserve', { numberOfKeys: 3, lua: RESERVE });
    this.redis = redis as Redis & WithScripts;
  }

  /** Checks and takes a hold against the pool's copy (and its key's) and every open hold, in one script. */
  async reserve(hold: HotHold, deadOwners: readonly string[], debit: boolean): Promise<HotReserve> {
    const now = hold.createdAt.getTime();
    const reply = await this.redis.billingReserve(
      ...keysOf(hold.organizationId, hold.product),
      keyPoolOf(hold.organizationId, hold.limitedKey),
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
      hold.limitedKey ?? '',
    );
    if (reply[0] === 'ok') return { kind: 'ok' };
    if (reply[0] === 'load') return { kind: 'load' };
    return { kind: reply[0] === 'refused_key' ? 'refused_key' : 'refused', version: BigInt(reply[1]!), heldMicros: BigInt(reply[2]!) };
  }

  /** Installs a limited key's pool as read from the database, unless a newer copy is there. */
  async installKey(organizationId: string, apiKeyId: string, state: PoolState): Promise<void> {
    await this.redis.billingLoad(keyPoolOf(organizationId, apiKeyId), ...installArgs(state));
  }

  /** Installs the pool's row as read from (or just written to) the database, unless a newer copy is there. */
  async install(organizationId: string, product: string | null, state: PoolState): Promise<void> {
    await this.redis.billingLoad(keysOf(organizationId, product)[0], ...installArgs(state));
  }

  /** After the charge is committed: drops the hold and installs the rows the settlement wrote (its key's pool too, when given). */
  async settle(hold: Pick<HotHold, 'organizationId' | 'product' | 'id' | 'limitedKey'>, state: PoolState, keyState: PoolState | null): Promise<void> {
    await this.redis.billingSettle(
      ...keysOf(hold.organizationId, hold.product),
      keyPoolOf(hold.organizationId, hold.limitedKey),
      hold.id,
      ...installArgs(state),
      ...(keyState ? installArgs(keyState) : []),
    );
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

/** A key's pool copy, in its organization's slot (a placeholder name when there is none: scripts take a fixed number of keys). */
function keyPoolOf(organizationId: string, apiKeyId: string | null): string {
  return `billing:{${organizationId}}:key:${apiKeyId ?? '-'}`;
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
    state.sharePercent === null ? '' : String(state.sharePercent),
  ];
}
