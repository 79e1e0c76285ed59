// Usage rows of unmetered requests are written behind, in batches, and rolled up: nothing is
// written per request, the requests of one group settled in the same second are one row, a
// full batch or the timer writes one statement, and every in-process read (the usage report,
// shutdown) flushes first, so nothing settled is missing from what it sees. The batch
// statement itself round-trips every column on PGlite and on PostgreSQL.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Prisma, PrismaClient } from '../../generated/prisma/client.js';
import { insertUsageRows, USAGE_FLUSH_ROWS, UsageBuffer } from '../../server/billing/usage-buffer.js';
import { createLogger } from '../../server/logging.js';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { ask, createOrg, pricedCatalog } from './support.js';

type Row = Prisma.UsageRecordCreateManyInput;

/** The columns of the insert, in its order, as named in each statement's rows. */
const COLUMNS = ['organizationId', 'apiKeyId', 'operation', 'model', 'provider', 'inputTokens', 'outputTokens', 'images', 'costMicros', 'billedMicros', 'product', 'reservationId', 'traceId', 'createdAt', 'calls'] as const;

/** Records each statement's rows, read back from its column arrays. */
function fakeDatabase(fail = false) {
  const writes: Record<string, unknown>[][] = [];
  const errors: unknown[] = [];
  const prisma = {
    $executeRaw: async (_sql: TemplateStringsArray, ...columns: unknown[][]) => {
      if (fail) throw new Error('database down');
      writes.push(columns[0]!.map((_, i) => Object.fromEntries(COLUMNS.map((name, c) => [name, columns[c]![i]]))));
      return columns[0]!.length;
    },
  } as unknown as Pick<PrismaClient, '$executeRaw'>;
  return { prisma, writes, logger: { error: (...args: unknown[]) => void errors.push(args) }, errors };
}

const AT = new Date('2026-11-26T10:00:00.000Z').getTime();
/** A request of its own group (operation `op<n>`) unless `operation` says otherwise. */
const row = (n: number, more: Partial<Row> = {}): Row => ({ organizationId: 'org', operation: `op${n}`, traceId: `trc_${n}`, createdAt: new Date(AT), ...more });
// Never fires during a test: only a full batch or an explicit flush writes.
const NEVER = 3_600_000;

describe('UsageBuffer', () => {
  it('writes nothing per row, then everything buffered in one statement on flush', async () => {
    const db = fakeDatabase();
    const buffer = new UsageBuffer(db.prisma, db.logger, NEVER);
    buffer.add([row(1)]);
    buffer.add([row(2), row(3)]);
    expect(db.writes).toHaveLength(0);
    await buffer.flush();
    expect(db.writes.map((w) => w.map((r) => r.traceId))).toEqual([['trc_1', 'trc_2', 'trc_3']]);
    await buffer.flush();
    expect(db.writes).toHaveLength(1);
  });

  it('rolls up the requests of one group settled in the same second into one row', async () => {
    const db = fakeDatabase();
    const buffer = new UsageBuffer(db.prisma, db.logger, NEVER);
    const same = { operation: 'chat', model: 'm', provider: 'p', apiKeyId: 'key' };
    buffer.add([row(1, { ...same, inputTokens: 3, outputTokens: 4, images: 1, costMicros: 10n, billedMicros: 7n, createdAt: new Date(AT + 900) })]);
    buffer.add([row(2, { ...same, inputTokens: 5, outputTokens: 6, costMicros: 20, billedMicros: 0n, createdAt: new Date(AT + 100) })]);
    // Apart: the next second, another key, another model.
    buffer.add([row(3, { ...same, inputTokens: 1, createdAt: new Date(AT + 1_000) })]);
    buffer.add([row(4, { ...same, apiKeyId: 'other key', createdAt: new Date(AT + 200) })]);
    buffer.add([row(5, { ...same, model: 'other', createdAt: new Date(AT + 300) })]);
    await buffer.flush();
    const [written] = db.writes;
    expect(written).toHaveLength(4);
    expect(written[0]).toEqual({
      organizationId: 'org', apiKeyId: 'key', operation: 'chat', model: 'm', provider: 'p', inputTokens: 8, outputTokens: 10, images: 1,
      costMicros: '30', billedMicros: '7', product: null, reservationId: null, traceId: null, createdAt: new Date(AT + 100).toISOString(), calls: 2,
    });
    expect(written.slice(1).map((r) => [r.traceId, r.calls, r.createdAt])).toEqual([
      ['trc_3', 1, new Date(AT + 1_000).toISOString()],
      ['trc_4', 1, new Date(AT + 200).toISOString()],
      ['trc_5', 1, new Date(AT + 300).toISOString()],
    ]);
  });

  it('writes a full batch at once', async () => {
    const db = fakeDatabase();
    const buffer = new UsageBuffer(db.prisma, db.logger, NEVER);
    buffer.add(Array.from({ length: USAGE_FLUSH_ROWS }, (_, i) => row(i)));
    buffer.add([row(-1)]);
    await buffer.flush();
    expect(db.writes.map((w) => w.length)).toEqual([USAGE_FLUSH_ROWS, 1]);
  });

  it('writes after the interval when nobody flushes', async () => {
    const db = fakeDatabase();
    const buffer = new UsageBuffer(db.prisma, db.logger, 1);
    buffer.add([row(1)]);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => db.writes.length > 0 && (clearInterval(poll), resolve()), 5);
    });
    expect(db.writes).toHaveLength(1);
  });

  it('logs a failed write, and a flush still resolves', async () => {
    const db = fakeDatabase(true);
    const buffer = new UsageBuffer(db.prisma, db.logger, NEVER);
    buffer.add([row(1), row(2)]);
    await buffer.flush();
    expect(db.errors).toHaveLength(1);
    expect(db.errors[0]).toEqual([expect.objectContaining({ rows: 2 }), 'could not record the usage of unmetered requests']);
  });
});

/** Every column written and read back, optional ones absent and present. */
async function roundTrip(db: Database): Promise<void> {
  const org = await db.prisma.organization.create({ data: { name: `usage-rows-${Date.now()}-${Math.random()}` } });
  const createdAt = new Date('2026-11-23T10:11:12.345Z');
  const full: Row = {
    organizationId: org.id, apiKeyId: null, operation: 'createResponse', model: 'gpt-5', provider: 'openai', inputTokens: 7,
    outputTokens: 9, images: 1, costMicros: 12_345_678_901n, billedMicros: 42n, product: 'code-assist',
    reservationId: '0b7f6a1e-6a8d-4b7e-9a53-8f2a1d3c4e5f', traceId: null, createdAt, calls: 3,
  };
  const bare: Row = { organizationId: org.id, operation: 'createEmbeddings', traceId: 'trc_bare', createdAt };
  expect(await insertUsageRows(db.prisma, [full, bare])).toBe(2);
  const read = await db.prisma.usageRecord.findMany({ where: { organizationId: org.id }, orderBy: { calls: 'asc' } });
  expect(read.map(({ id: _id, ...rest }) => rest)).toEqual([
    { ...bare, apiKeyId: null, model: null, provider: null, inputTokens: 0, outputTokens: 0, images: 0, costMicros: 0n, billedMicros: 0n, product: null, reservationId: null, calls: 1 },
    full,
  ]);
}

describe('the batch statement', () => {
  it('writes every column as given on PGlite', async () => {
    const db = await openDatabase({ dataDir: 'memory://', logger: createLogger('silent') });
    try {
      await roundTrip(db);
    } finally {
      await db.close();
    }
  });

  describePostgres('on PostgreSQL', () => {
    const database = useTestDatabase('usage_rows');
    it('writes every column as given', async () => {
      const db = await openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger: createLogger('silent') });
      try {
        await roundTrip(db);
      } finally {
        await db.close();
      }
    });
  });
});

describe('buffered usage on a platform', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedCatalog() });
  });
  afterAll(() => platform?.close());

  it('GET /api/v1/usage counts a settled unmetered request still in the buffer', async () => {
    const org = await createOrg(platform, 'buffered');
    const { plaintext: reader } = await platform.services.identity.keys.issue(org.id, { scopes: ['billing:read'], label: 'reader', expiresAt: null });
    const calls = [[{ deploymentId: 'local-chat', modelId: 'priced', outcome: 'ok', usage: { promptTokens: 3, completionTokens: 4 } }]];
    const settle = { organizationId: org.id, apiKeyId: org.keyId, operation: 'createGuardedChatCompletion', product: null, charge: false, reservation: null, calls };
    await platform.services.billing.reservations.settle({ ...settle, traceId: 'trc_buffered_1' });
    await platform.services.billing.reservations.settle({ ...settle, traceId: 'trc_buffered_2' });
    const res = await platform.mgmt('/api/v1/usage', { key: reader });
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data.lines).toEqual([{ group: 'priced', calls: 2, inputTokens: 6, outputTokens: 8, costMicros: 2 * (3 * 1000 + 4 * 2000), billedMicros: 2 * (3 * 1000 + 4 * 2000) }]);
  });
});

describe('shutdown', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'billing-usage-buffer-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('writes the buffered usage rows before the database closes', async () => {
    const first = await startTestPlatform({ dataDir, logLevel: 'silent' }, { catalog: pricedCatalog() });
    const org = await createOrg(first, 'closing');
    const answers = await Promise.all(
      [1, 2, 3].map(() => first.api('/ai/v2/guarded/chat/completions', { method: 'POST', key: org.key, body: JSON.stringify(ask()) })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    await Promise.all(answers.map((a) => a.text()));
    const adminKey = first.adminKey;
    await first.close();

    const second = await startTestPlatform({ dataDir, logLevel: 'silent' }, { catalog: pricedCatalog() }, { adminKey });
    try {
      const written = await second.services.database.prisma.usageRecord.aggregate({ where: { organizationId: org.id }, _sum: { calls: true } });
      expect(written._sum.calls).toBe(3);
    } finally {
      await second.close();
    }
  }, 60_000);
});
