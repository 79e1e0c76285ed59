// The ingestion queue on PostgreSQL (the suite: ingestion-queue.suite.ts): every connection
// opened is its own client, so the sharing test runs two instances' workers on one queue.
import { createLogger } from '../../server/logging.js';
import { openDatabase } from '../../server/storage/index.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { ingestionQueueSuite } from './ingestion-queue.suite.js';

describePostgres('ingestion queue on PostgreSQL', () => {
  const database = useTestDatabase('ingestion_queue');
  ingestionQueueSuite(() => openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger: createLogger('silent') }));
});
