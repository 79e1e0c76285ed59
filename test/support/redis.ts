// For suites that need a real Redis server; each suite uses its own key prefix and channel
// traffic only, so suites can share one server.
import { Redis } from 'ioredis';
import { describeWithService } from './services.js';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

async function probe(): Promise<string | undefined> {
  const client = new Redis(TEST_REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    client.disconnect();
  }
}

const unreachableReason = await probe();

export function describeRedis(name: string, fn: () => void): void {
  describeWithService({ what: `Redis at ${TEST_REDIS_URL}`, variable: 'TEST_REDIS_URL', unreachableReason }, name, fn);
}
