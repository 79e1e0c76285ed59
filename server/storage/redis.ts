// Redis for what many stateless instances must share: revocations now; counters and rate
// limits later. Optional: without REDIS_URL each instance works alone.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

export interface RedisConnections {
  /** Commands and publishing. */
  client: Redis;
  /** A connection in subscriber mode can run nothing else, so subscriptions get their own. */
  subscriber: Redis;
  ping(): Promise<number>;
  close(): Promise<void>;
}

export async function connectRedis(url: string, logger: Logger): Promise<RedisConnections> {
  const open = (role: string) => {
    const connection = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, connectTimeout: 5_000 });
    connection.on('error', (error) => logger.warn({ role, err: error.message }, 'redis connection error'));
    return connection;
  };
  const client = open('client');
  const subscriber = open('subscriber');
  try {
    await Promise.all([client.connect(), subscriber.connect()]);
  } catch (error) {
    client.disconnect();
    subscriber.disconnect();
    throw new Error(`cannot reach Redis at REDIS_URL: ${(error as Error).message}`);
  }
  return {
    client,
    subscriber,
    async ping() {
      const started = performance.now();
      await client.ping();
      return performance.now() - started;
    },
    async close() {
      await Promise.allSettled([client.quit(), subscriber.quit()]);
    },
  };
}
