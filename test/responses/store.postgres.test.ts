// Stored responses on PostgreSQL (the migration applied by the server's migrator): a
// conversation is found by its organization only, expires after the retention, and the
// sweep deletes expired rows.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OrganizationService } from '../../server/identity/organizations.js';
import { createLogger } from '../../server/logging.js';
import { ResponseStore } from '../../server/responses/store.js';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';

describePostgres('stored responses on PostgreSQL', () => {
  const database = useTestDatabase('responses_store');
  let db: Database;
  let orgA: string;
  let orgB: string;

  beforeAll(async () => {
    db = await openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger: createLogger('silent') });
    const organizations = new OrganizationService(db.prisma);
    orgA = (await organizations.createOrganization('responses-a')).id;
    orgB = (await organizations.createOrganization('responses-b')).id;
  }, 30_000);
  afterAll(() => db?.close());

  const record = (id: string, organizationId: string) => ({
    id,
    organizationId,
    previousResponseId: null,
    model: 'local-chat',
    status: 'completed',
    input: [{ type: 'message' as const, role: 'user' as const, content: 'Hello' }],
    output: [{ type: 'message' as const, id: 'msg_1', role: 'assistant' as const, status: 'completed' as const, content: [{ type: 'output_text' as const, text: 'Hi', annotations: [] }] }],
  });

  it('gives the whole conversation to its organization only', async () => {
    const store = new ResponseStore(db.prisma, 60_000);
    await store.save(record('resp_pg_1', orgA));
    const found = await store.conversation(orgA, 'resp_pg_1');
    expect(found?.model).toBe('local-chat');
    expect(found?.items.map((i) => ('role' in i ? i.role : i.type))).toEqual(['user', 'assistant']);
    expect(await store.conversation(orgB, 'resp_pg_1')).toBeNull();
  });

  it('an expired response is not found, and the sweep deletes it', async () => {
    const store = new ResponseStore(db.prisma, 0);
    await store.save(record('resp_pg_2', orgA));
    expect(await store.conversation(orgA, 'resp_pg_2')).toBeNull();
    const stop = store.startSweeping(10);
    await expect.poll(() => db.prisma.storedResponse.count({ where: { id: 'resp_pg_2' } }), { timeout: 5_000 }).toBe(0);
    stop();
  });
});
