// The ingestion queue on the embedded PGlite (the suite: ingestion-queue.suite.ts). PGlite
// has one owner, so "two instances" are two workers on the one database.
import { describe } from 'vitest';
import { createLogger } from '../../server/logging.js';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { ingestionQueueSuite } from './ingestion-queue.suite.js';

describe('ingestion queue on PGlite', () => {
  let database: Promise<Database> | undefined;
  ingestionQueueSuite(() => (database ??= openDatabase({ dataDir: 'memory://', logger: createLogger('silent') })));
});
