// The billing settings admission needs on every inference request (mode, weekly cap), kept
// in memory per organization instead of read from the database each time. A change made
// through BillingService drops the entry on this instance at once and is announced to the
// others through Redis (when configured). A change nobody announces (the operator CLI run
// without REDIS_URL, a Redis message lost, an edit in SQL) takes effect on every instance
// within BILLING_SETTINGS_CACHE_MS: for that long an organization switched to prepaid may
// still be served unmetered, or one switched to unmetered still be gated. The weekly cap
// itself is enforced by the hold (database row or its Redis copy: redis-holds.ts), never from here.
import type { Logger } from 'pino';
import type { RedisConnections } from '../storage/redis.js';

export const BILLING_SETTINGS_CACHE_MS = 5_000;
export const SETTINGS_CHANNEL = 'platform:billing-settings-changed';

/** `organizationId` null: forget every organization (a message may have been missed). */
type Listener = (organizationId: string | null) => void;

/** Announces that an organization's billing settings changed, to every instance. */
export interface SettingsChanges {
  publish(organizationId: string): Promise<void>;
  subscribe(listener: Listener): void;
  close(): Promise<void>;
}

/** Single instance: the change only needs to reach this process. */
export function localSettingsChanges(): SettingsChanges {
  const listeners: Listener[] = [];
  return {
    publish: async (organizationId) => listeners.forEach((l) => l(organizationId)),
    subscribe: (listener) => void listeners.push(listener),
    close: async () => undefined,
  };
}

export async function redisSettingsChanges(redis: RedisConnections, logger: Logger): Promise<SettingsChanges> {
  const listeners: Listener[] = [];
  const notify = (organizationId: string | null) => listeners.forEach((l) => l(organizationId));
  const onMessage = (channel: string, message: string) => {
    if (channel === SETTINGS_CHANNEL) notify(message);
  };
  let subscribed = false;
  // ioredis resubscribes by itself, but what was published meanwhile is lost.
  const onReady = () => subscribed && notify(null);
  redis.subscriber.on('message', onMessage);
  redis.subscriber.on('ready', onReady);
  await redis.subscriber.subscribe(SETTINGS_CHANNEL);
  subscribed = true;
  return {
    async publish(organizationId) {
      notify(organizationId);
      try {
        await redis.client.publish(SETTINGS_CHANNEL, organizationId);
      } catch (error) {
        // The change is committed; other instances read it when their entry expires.
        logger.warn({ err: (error as Error).message }, 'could not announce a billing settings change: other instances catch up within the cache TTL');
      }
    },
    subscribe: (listener) => void listeners.push(listener),
    async close() {
      redis.subscriber.off('message', onMessage);
      redis.subscriber.off('ready', onReady);
      await redis.subscriber.unsubscribe(SETTINGS_CHANNEL).catch(() => undefined);
    },
  };
}

/** Values per organization, loaded on first use and kept BILLING_SETTINGS_CACHE_MS or until announced changed. */
export class SettingsCache<T> {
  /** One small entry per organization that made a request: bounded by the organizations. */
  private readonly entries = new Map<string, { until: number; value: Promise<T> }>();

  constructor(
    private readonly load: (organizationId: string) => Promise<T>,
    private readonly changes: SettingsChanges,
    private readonly clock: () => number = Date.now,
  ) {
    changes.subscribe((organizationId) => (organizationId === null ? this.entries.clear() : this.entries.delete(organizationId)));
  }

  get(organizationId: string): Promise<T> {
    const now = this.clock();
    const cached = this.entries.get(organizationId);
    if (cached && cached.until > now) return cached.value;
    const value = this.load(organizationId);
    const entry = { until: now + BILLING_SETTINGS_CACHE_MS, value };
    this.entries.set(organizationId, entry);
    // A failed read is not remembered (unless a newer one replaced it): the next request asks again.
    value.catch(() => this.entries.get(organizationId) === entry && this.entries.delete(organizationId));
    return value;
  }

  /**
   * Call after the change is committed: a load that started earlier is dropped with its
   * entry, so no instance keeps the old value past the announcement.
   */
  changed(organizationId: string): Promise<void> {
    return this.changes.publish(organizationId);
  }
}
