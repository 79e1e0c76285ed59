// Tells every instance that a credential is gone, so its cached principal is dropped:
// at once on the instance that revoked, within about a second elsewhere through Redis.
import type { Logger } from 'pino';
import type { RedisConnections } from '../storage/redis.js';

export const REVOCATION_CHANNEL = 'platform:credential-revoked';

/** `hashes` null means "forget every cached credential" (a message may have been missed). */
type Listener = (hashes: string[] | null) => void;

export interface RevocationBus {
  /** Announce that the credentials with these hashes no longer authenticate. */
  publish(hashes: string[]): Promise<void>;
  subscribe(listener: Listener): void;
  close(): Promise<void>;
}

function listeners() {
  const all: Listener[] = [];
  return { add: (l: Listener) => void all.push(l), notify: (hashes: string[] | null) => all.forEach((l) => l(hashes)) };
}

/** Single instance: revocation only needs to reach this process. */
export function localRevocationBus(): RevocationBus {
  const { add, notify } = listeners();
  return { publish: async (hashes) => notify(hashes), subscribe: add, close: async () => undefined };
}

export async function redisRevocationBus(redis: RedisConnections, logger: Logger): Promise<RevocationBus> {
  const { add, notify } = listeners();
  redis.subscriber.on('message', (channel: string, message: string) => {
    if (channel === REVOCATION_CHANNEL) notify(message.split(','));
  });
  let subscribed = false;
  redis.subscriber.on('ready', () => {
    // ioredis resubscribes by itself, but what was published meanwhile is lost.
    if (subscribed) {
      logger.warn('redis subscriber reconnected: dropping cached credentials');
      notify(null);
    }
  });
  await redis.subscriber.subscribe(REVOCATION_CHANNEL);
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
    close: async () => {
      await redis.subscriber.unsubscribe(REVOCATION_CHANNEL).catch(() => undefined);
    },
  };
}
