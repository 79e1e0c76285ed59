// Idempotency records for inference operations, kept out of the database: a client's retries
// of one call come within seconds to minutes, and an inference answer has no durable effect
// a day-long record would protect. In memory per instance, or in Redis when instances share
// one (with the memory store while Redis cannot answer).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import { RedisFallback } from './redis-fallback.js';
import type { RedisConnections } from './redis.js';
import { verdict, type Answer, type Claim, type ClaimRequest, type IdempotencyRecords } from './idempotency-store.js';

/** How long an inference operation's Idempotency-Key is remembered (README, configuration). */
export const INFERENCE_IDEMPOTENCY_TTL_MS = 10 * 60 * 1000;

interface CachedRecord {
  operationId: string;
  requestHash: string;
  status: number | null;
  body?: unknown;
}

const keyOf = (request: ClaimRequest) => `idempotency:${request.organizationId}:${request.key}`;

/** A record id names the claim (a nonce, without spaces) and the cache key it holds. */
const recordIdOf = (nonce: string, key: string) => `${nonce} ${key}`;
function parseRecordId(recordId: string): { nonce: string; key: string } {
  const space = recordId.indexOf(' ');
  return { nonce: recordId.slice(0, space), key: recordId.slice(space + 1) };
}

/**
 * Per instance, bounded by the size of the answers it holds; the least recently used go first
 * (an evicted key is free again: a retry then runs, as after the TTL).
 */
export class MemoryIdempotencyStore implements IdempotencyRecords {
  private readonly records: LRUCache<string, CachedRecord & { nonce: string }>;

  constructor(ttlMs = INFERENCE_IDEMPOTENCY_TTL_MS, maxBytes = 64 * 1024 * 1024) {
    this.records = new LRUCache({ ttl: ttlMs, maxSize: maxBytes });
  }

  async claim(request: ClaimRequest): Promise<Claim> {
    const key = keyOf(request);
    const existing = this.records.get(key);
    if (existing) return verdict(existing, request);
    const nonce = randomUUID();
    this.records.set(key, { operationId: request.operationId, requestHash: request.requestHash, status: null, nonce }, { size: key.length });
    return { kind: 'new', recordId: recordIdOf(nonce, key) };
  }

  async inspect(request: ClaimRequest): Promise<Exclude<Claim, { kind: 'new' }> | null> {
    const existing = this.records.get(keyOf(request));
    return existing ? verdict(existing, request) : null;
  }

  async complete(recordId: string, { status, body, bytes }: Answer): Promise<void> {
    const { nonce, key } = parseRecordId(recordId);
    const record = this.records.get(key);
    // Its TTL still counts from the claim, as the database's does.
    if (record?.nonce === nonce) this.records.set(key, { ...record, status, body }, { size: key.length + bytes, noUpdateTTL: true });
  }

  async release(recordId: string): Promise<void> {
    const { nonce, key } = parseRecordId(recordId);
    if (this.records.get(key)?.nonce === nonce) this.records.delete(key);
  }
}

// A record is stored as "<nonce>\n<operationId>\n<requestHash>\n" and, once answered,
// the answer's JSON appended (APPEND keeps the TTL). Only the claim that wrote it, known by
// its nonce, may complete or release it.
const IF_OWNED = `if string.sub(redis.call('GET', KEYS[1]) or '', 1, #ARGV[1]) == ARGV[1] then return redis.call(`;
const COMPLETE = `${IF_OWNED}'APPEND', KEYS[1], ARGV[2]) end`;
const RELEASE = `${IF_OWNED}'DEL', KEYS[1]) end`;

function parseStored(stored: string): CachedRecord {
  const [, operationId, requestHash, answer] = stored.split('\n');
  return { operationId, requestHash, ...(answer ? (JSON.parse(answer) as { status: number; body: unknown }) : { status: null }) };
}

/** The scripts as commands: sent as EVALSHA, not with their text on every call. */
interface WithScripts {
  idempotencyComplete(key: string, nonceLine: string, answer: string): Promise<unknown>;
  idempotencyRelease(key: string, nonceLine: string): Promise<unknown>;
}

/** Shared by every instance on the same Redis, expiring by Redis's own TTL. */
export class RedisIdempotencyStore implements IdempotencyRecords {
  private readonly scripts: WithScripts;

  constructor(
    private readonly redis: Redis,
    private readonly ttlMs = INFERENCE_IDEMPOTENCY_TTL_MS,
  ) {
    redis.defineCommand('idempotencyComplete', { numberOfKeys: 1, lua: COMPLETE });
    redis.defineCommand('idempotencyRelease', { numberOfKeys: 1, lua: RELEASE });
    this.scripts = redis as unknown as WithScripts;
  }

  async claim(request: ClaimRequest, attempt = 0): Promise<Claim> {
    const key = keyOf(request);
    const nonce = randomUUID();
    const record = `${nonce}\n${request.operationId}\n${request.requestHash}\n`;
    if ((await this.redis.set(key, record, 'PX', this.ttlMs, 'NX')) === 'OK') return { kind: 'new', recordId: recordIdOf(nonce, key) };
    const existing = await this.inspect(request);
    // Released or expired between the two commands: claim again.
    if (existing || attempt > 2) return existing ?? { kind: 'in_progress' };
    return this.claim(request, attempt + 1);
  }

  async inspect(request: ClaimRequest): Promise<Exclude<Claim, { kind: 'new' }> | null> {
    const stored = await this.redis.get(keyOf(request));
    return stored ? verdict(parseStored(stored), request) : null;
  }

  async complete(recordId: string, { status, json }: Answer): Promise<void> {
    const { nonce, key } = parseRecordId(recordId);
    await this.scripts.idempotencyComplete(key, `${nonce}\n`, `{"status":${status},"body":${json}}`);
  }

  async release(recordId: string): Promise<void> {
    const { nonce, key } = parseRecordId(recordId);
    await this.scripts.idempotencyRelease(key, `${nonce}\n`);
  }
}

/**
 * Redis, and this instance's memory while Redis cannot answer (RedisFallback: logged once
 * each way, counted in idempotency_local_decisions_total): inference keeps working, each
 * instance then remembering the keys it saw (a repeat reaching another instance runs
 * again). A key claimed in memory stays answered from memory after Redis is back, so a
 * retry across the switch still gets its first answer here.
 */
export class FallbackIdempotencyStore implements IdempotencyRecords {
  constructor(
    private readonly shared: IdempotencyRecords,
    private readonly local: IdempotencyRecords,
    private readonly fallback: RedisFallback,
  ) {}

  async claim(request: ClaimRequest): Promise<Claim> {
    const remembered = await this.local.inspect(request);
    if (remembered) return remembered;
    return this.fallback.run(
      async () => tagged(SHARED, await this.shared.claim(request)),
      async () => tagged(LOCAL, await this.local.claim(request)),
    );
  }

  async inspect(request: ClaimRequest): Promise<Exclude<Claim, { kind: 'new' }> | null> {
    return (
      (await this.local.inspect(request)) ??
      this.fallback.run(
        () => this.shared.inspect(request),
        async () => null,
      )
    );
  }

  complete(recordId: string, answer: Answer): Promise<void> {
    const { store, id } = this.storeOf(recordId);
    return store.complete(id, answer);
  }

  release(recordId: string): Promise<void> {
    const { store, id } = this.storeOf(recordId);
    return store.release(id);
  }

  private storeOf(recordId: string): { store: IdempotencyRecords; id: string } {
    return { store: recordId.startsWith(SHARED) ? this.shared : this.local, id: recordId.slice(SHARED.length) };
  }
}

// Record ids say which store holds the claim (both prefixes have the same length).
const SHARED = 'redis:';
const LOCAL = 'local:';

function tagged(prefix: string, claim: Claim): Claim {
  return claim.kind === 'new' ? { kind: 'new', recordId: prefix + claim.recordId } : claim;
}

/** The inference store of one instance: memory alone, or Redis (fail-fast connection) with the memory fallback. */
export function inferenceIdempotencyStore(redis: RedisConnections | null, logger: Logger, metrics: Metrics): IdempotencyRecords {
  if (!redis) return new MemoryIdempotencyStore();
  const fallback = new RedisFallback(
    {
      metric: 'idempotency_local_decisions_total',
      help: 'Idempotency-Key claims of inference requests kept by this instance alone because Redis could not answer (reason: redis_unavailable).',
      degraded: 'inference Idempotency-Keys are kept per instance until it is back',
      restored: 'inference Idempotency-Keys are shared across instances again',
    },
    logger,
    metrics,
  );
  return new FallbackIdempotencyStore(new RedisIdempotencyStore(redis.hotPath), new MemoryIdempotencyStore(), fallback);
}
