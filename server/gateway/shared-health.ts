// Shares circuit changes between instances through Redis, so an outage one instance sees
// steers every instance's traffic: changes are published on a channel, and the open
// circuits are also kept in a hash that a starting instance reads. Trial calls of an open
// circuit are shared too: one instance in all makes each (a key set only if absent, for
// the length of a trial slot), and the circuit it closes closes everywhere.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RedisConnections } from '../storage/redis.js';
import type { TrialGate } from './circuit-trials.js';
import type { CircuitEvent, DeploymentHealth } from './health.js';

export const CIRCUIT_CHANNEL = 'platform:gateway-circuit';
export const CIRCUIT_HASH = 'platform:gateway-circuits';
export const TRIAL_KEY = 'platform:gateway-trial';

/** One instance per trial slot makes the trial call; without Redis at that moment, each instance makes its own. */
export function sharedTrialGate(redis: RedisConnections, logger: Logger): TrialGate {
  return async (deploymentId, slotMs) => {
    try {
      return (await redis.client.set(`${TRIAL_KEY}:${deploymentId}`, '1', 'PX', slotMs, 'NX')) === 'OK';
    } catch (error) {
      logger.warn({ err: (error as Error).message }, 'could not share a trial call through Redis');
      return true;
    }
  };
}

export async function shareHealth(health: DeploymentHealth, redis: RedisConnections, logger: Logger): Promise<() => Promise<void>> {
  const instance = randomUUID();
  const onMessage = (channel: string, message: string) => {
    if (channel !== CIRCUIT_CHANNEL) return;
    try {
      const { from, event } = JSON.parse(message) as { from: string; event: CircuitEvent };
      if (from !== instance) health.applyPeerEvent(event);
    } catch {
      logger.warn('ignored a malformed circuit message from Redis');
    }
  };
  redis.subscriber.on('message', onMessage);
  await redis.subscriber.subscribe(CIRCUIT_CHANNEL);
  for (const [, value] of Object.entries(await redis.client.hgetall(CIRCUIT_HASH))) {
    const event = JSON.parse(value) as CircuitEvent;
    if (event.blockedUntil > Date.now()) health.applyPeerEvent(event);
  }
  health.onChange((event) => {
    const write = event.circuit === 'closed' ? redis.client.hdel(CIRCUIT_HASH, event.deploymentId) : redis.client.hset(CIRCUIT_HASH, event.deploymentId, JSON.stringify(event));
    Promise.all([write, redis.client.publish(CIRCUIT_CHANNEL, JSON.stringify({ from: instance, event }))]).catch((error) =>
      // Each instance still keeps its own passive health; only the sharing is lost.
      logger.warn({ err: (error as Error).message }, 'could not share a circuit change through Redis'),
    );
  });
  return async () => {
    redis.subscriber.off('message', onMessage);
    await redis.subscriber.unsubscribe(CIRCUIT_CHANNEL).catch(() => undefined);
  };
}
