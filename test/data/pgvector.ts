// Whether the test PostgreSQL server offers pgvector, which retrieval needs. Suites that
// retrieve run on PostgreSQL only where it does, and say why they are skipped where it
// does not (CI's PostgreSQL 15 here has none; PGlite ships it and runs them always).
import pg from 'pg';
import { postgresAvailable, TEST_POSTGRES_URL } from '../support/postgres.js';

async function serverHasPgvector(): Promise<boolean> {
  if (!postgresAvailable) return false;
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return (await client.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`)).rowCount === 1;
  } finally {
    await client.end();
  }
}

export const pgvector = await serverHasPgvector();

/** Appended to the name of what needs pgvector: the reason it is skipped, or nothing. */
export const NEEDS_PGVECTOR = pgvector ? '' : ' (skipped: this PostgreSQL has no pgvector, which retrieval needs; PGlite runs it)';

/** Appended to the name of what only a PostgreSQL without pgvector can show. */
export const WITHOUT_PGVECTOR = pgvector ? ' (skipped: this PostgreSQL has pgvector)' : '';
