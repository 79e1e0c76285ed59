// For suites that need a real Redis server; each suite uses its own key prefix and channel
// traffic only, so suites can share one server.
import { createServer, Socket, type Server } from 'node:net';
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

/** A TCP relay to the test Redis that can be cut (connections dropped, new ones refused) and restored. */
export class CuttableRelay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    const target = new URL(TEST_REDIS_URL);
    this.server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(Number(target.port || 6379), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server!.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
    this.server = null;
  }

  get url(): string {
    const target = new URL(TEST_REDIS_URL);
    target.hostname = '127.0.0.1';
    target.port = String(this.port);
    return target.toString();
  }
}
