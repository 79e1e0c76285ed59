// Ingestion end to end on PostgreSQL (the suite: ingestion.suite.ts). Each platform gets its
// own fresh database, dropped when it closes.
import { startTestPlatform } from '../support/platform.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { ingestionSuite } from './ingestion.suite.js';

describePostgres('ingestion on PostgreSQL', () => {
  ingestionSuite(async (overrides) => {
    const database = await createTestDatabase('ingestion');
    const platform = await startTestPlatform({ logLevel: 'warn', databaseUrl: database.url, ...overrides });
    return { ...platform, close: () => platform.close().finally(() => database.drop()) };
  });
});
