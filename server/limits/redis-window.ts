// The shared store of the sliding windows (window.ts): one Lua script checks and takes every
// counter of a request atomically, on Redis's clock, so all instances see one count. A
// refusal returns the refusing counter's live buckets and the same code as the local store
// works out Retry-After from them.
import type { Redis } from 'ioredis';
import { refusal, WINDOW_SECONDS, type Counter, type Decision, type WindowStore } from './window.js';

// KEYS: the counters (hashes: second → amount); ARGV: window seconds, then limit and cost per key.
const TAKE = `
local now = tonumber(redis.call('TIME')[1])
local window = tonumber(ARGV[1])
local oldest = now - window + 1
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[2 * i])
  local cost = tonumber(ARGV[2 * i + 1])
  local fields = redis.call('HGETALL', key)
  local used = 0
  local live = {}
  for j = 1, #fields, 2 do
    if tonumber(fields[j]) < oldest then
      redis.call('HDEL', key, fields[j])
    else
      used = used + tonumber(fields[j + 1])
      live[#live + 1] = fields[j]
      live[#live + 1] = fields[j + 1]
    end
  end
  if used + cost > limit then
    return {0, i - 1, now, live}
  end
end
for i, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, tostring(now), tonumber(ARGV[2 * i + 1]))
  redis.call('EXPIRE', key, window)
end
return {1}
`;

type TakeReply = [1] | [0, number, number, string[]];

interface WithTake {
  takeWindows(keyCount: number, ...args: (string | number)[]): Promise<TakeReply>;
}

export class RedisWindows implements WindowStore {
  constructor(private readonly client: Redis) {
    client.defineCommand('takeWindows', { lua: TAKE });
  }

  async take(counters: readonly Counter[]): Promise<Decision> {
    const reply = await (this.client as unknown as WithTake).takeWindows(
      counters.length,
      ...counters.map((c) => c.key),
      WINDOW_SECONDS,
      ...counters.flatMap((c) => [c.limit, c.cost]),
    );
    if (reply[0] === 1) return { allowed: true };
    const [, index, now, flat] = reply;
    const buckets: [number, number][] = [];
    for (let i = 0; i < flat.length; i += 2) buckets.push([Number(flat[i]), Number(flat[i + 1])]);
    return refusal(buckets, now, counters[index].cost, counters[index].limit, index);
  }
}
