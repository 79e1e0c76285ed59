// Tells every instance that a credential is gone, so its cached principal is dropped:
// at once on the instance that revoked, within about a second elsewhere through Redis.
import type { Logger } from 'pino';
import type { RedisConnections } from '../storage/redis.js';

export const REVOCATION_CHANNEL = 'platform:credential-revoked';
/** New API keys, by lookup id: instances that cached that lookup id as unknown look again. */
export const CREATION_CHANNEL = 'platform:credential-created';

/** `hashes` null means "forget every cached credential" (a message may have been missed). */
type Listener = (hashes: string[] | null) => void;

export interface RevocationBus {
  /** Announce that the credentials with these hashes no longer authenticate. */
  publish(hashes: string[]): Promise<void>;
  subscribe(listener: Listener): void;
  /** Announce new API keys by lookup id: a lookup id cached as unknown must be looked up again. */
  publishCreated(lookupIds: string[]): Promise<void>;
  /** `lookupIds` null means "forget every cached miss" (a message may have been missed). */
  subscribeCreated(listener: Listener): void;
  close(): Promise<void>;
}

function listeners() {
  const all: Listener[] = [];
  return { add: (l: Listener) => void all.push(l), notify: (values: string[] | null) => all.forEach((l) => l(values)) };
}

/** Single instance: revocation only needs to reach this process. */
export function localRevocationBus(): RevocationBus {
  const revoked = listeners();
  const created = listeners();
  return {
    publish: async (hashes) => revoked.notify(hashes),
    subscribe: revoked.add,
    publishCreated: async (lookupIds) => created.notify(lookupIds),
    subscribeCreated: created.add,
    close: async () => undefined,
  };
}

export async function redisRevocationBus(redis: RedisConnections, logger: Logger): Promise<RevocationBus> {
  const { add, notify } = listeners();
  const created = listeners();
  redis.subscriber.on('message', (channel: string, message: string) => {
    if (channel === REVOCATION_CHANNEL) notify(message.split(','));
    else if (channel === CREATION_CHANNEL) created.notify(message.split(','));
  });
  let subscribed = false;
  redis.subscriber.on('ready', () => {
    // ioredis resubscribes by itself, but what was published meanwhile is lost.
    if (subscribed) {
      logger.warn('redis subscriber reconnected: dropping cached credentials');
      notify(null);
      created.notify(null);
    }
  });
  await redis.subscriber.subscribe(REVOCATION_CHANNEL, CREATION_CHANNEL);
  subscribed = true;
  return {
    async publish(hashes) {
      notify(hashes);
      try {
        await redis.client.publish(REVOCATION_CHANNEL, hashes.join(','));
      } catch (error) {
        // The revocation is committed; other instances drop it when their cache TTL runs out.
        logger.warn({ err: (error as Error).message }, 'could not publish a revocation: other instances catch up within the cache TTL');
      }
    },
    subscribe: add,
    async publishCreated(lookupIds) {
      created.notify(lookupIds);
      try {
        await redis.client.publish(CREATION_CHANNEL, lookupIds.join(','));
      } catch (error) {
        // The key exists; another instance that cached its lookup id as unknown finds it when that miss expires (seconds).
        logger.warn({ err: (error as Error).message }, 'could not publish a new key: other instances find it within the miss cache TTL');
      }
    },
    subscribeCreated: created.add,
    close: async () => {
      await redis.subscriber.unsubscribe(REVOCATION_CHANNEL, CREATION_CHANNEL).catch(() => undefined);
    },
  };
}
