// The test PostgreSQL server: its URL and fresh, uniquely named databases on it. Free of
// vitest, so benchmarks create their databases with it too (test/support/postgres.ts wraps it
// for suites).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';

export async function withAdminClient<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** Creates an empty database with a unique name on the test server. */
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const safeLabel = label.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 30);
  const name = `t_${safeLabel}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdminClient((client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    // FORCE ends sessions a failed test may have leaked (PostgreSQL 13+).
    drop: () => withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => {}),
  };
}
