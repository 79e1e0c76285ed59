// The largest arrays the contract allows for item lookups, on PostgreSQL: every id is a
// bind parameter, and the statement must stay within the server's limit.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ItemService } from '../../server/data/items.js';
import { OrganizationService } from '../../server/identity/organizations.js';
import type { Principal } from '../../server/identity/principal.js';
import { createLogger } from '../../server/logging.js';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';

describePostgres('item lookups with the largest allowed arrays on PostgreSQL', () => {
  const database = useTestDatabase('items_limits');
  let db: Database;
  let items: ItemService;
  let principal: Principal;
  let publisherId: string;

  beforeAll(async () => {
    db = await openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger: createLogger('silent') });
    const organizations = new OrganizationService(db.prisma);
    const organization = await organizations.createOrganization('limits');
    publisherId = (await organizations.createPublisher(organization.name, 'limits')).id;
    principal = { kind: 'api_key', credentialId: randomUUID(), organizationId: organization.id, scopes: ['data:read', 'data:write'], expiresAt: null };
    items = new ItemService(db.prisma, organizations);
  }, 30_000);
  afterAll(() => db?.close());

  it('finds by 10000 producer ids, patches by 10000 item ids and deletes 1000', async () => {
    const item = await db.prisma.item.create({ data: { publisherId, fileName: 'a.md', producerId: 'p-0', type: 't-0', status: 'COMPLETED' } });
    const byProducer = await items.itemsByProducer(principal, publisherId, Array.from({ length: 10_000 }, (_, i) => `p-${i}`));
    expect(byProducer.map((i) => i.item_id)).toEqual([item.id]);

    const itemIds = [item.id, ...Array.from({ length: 9_999 }, () => randomUUID())];
    const types = Array.from({ length: 10_000 }, (_, i) => `t-${i}`);
    const statuses = Array.from({ length: 10_000 }, () => 'COMPLETED' as const);
    const patched = await items.patchItems(principal, publisherId, {
      filter: { item_ids: itemIds, types, statuses },
      ops: [{ op: 'replace', field: 'evergreen', value: true }],
    });
    expect(patched).toMatchObject({ total_matched: 1, total_patched: 1 });

    const deleted = await items.deleteItems(principal, itemIds.slice(0, 1000));
    expect(deleted).toMatchObject({ total_requested: 1000, total_deleted: 1 });
  });
});
