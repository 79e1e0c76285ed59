// For suites that need a real PostgreSQL server. Each suite gets a fresh,
// uniquely named database (dropped afterwards), so suites can run in parallel
// against one server. When the server is unreachable the suite is skipped
// locally with a message saying why, but FAILS under CI: CI must run it.
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, TEST_POSTGRES_URL, withAdminClient, type TestDatabase } from './postgres-server.js';
import { describeWithService } from './services.js';

export { createTestDatabase, TEST_POSTGRES_URL, type TestDatabase };

function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** undefined when reachable, otherwise the reason. Checked once per test file. */
async function probe(): Promise<string | undefined> {
  try {
    await withAdminClient((client) => client.query('SELECT 1'));
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  }
}

const unreachableReason = await probe();

export const postgresAvailable = unreachableReason === undefined;

/**
 * `describe` for PostgreSQL suites: runs when the server answers; otherwise
 * fails under CI and is skipped (with a console message) elsewhere.
 */
export function describePostgres(name: string, fn: () => void): void {
  describeWithService(
    { what: `PostgreSQL at ${displayUrl(TEST_POSTGRES_URL)}`, variable: 'TEST_POSTGRES_URL', unreachableReason },
    name,
    fn,
  );
}

/**
 * Inside a `describePostgres` body: a fresh database for the suite, created
 * in beforeAll and dropped in afterAll. Read `.url` inside tests or hooks.
 */
export function useTestDatabase(label?: string): { readonly url: string; readonly name: string } {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(label);
  }, 30_000);
  afterAll(async () => {
    await database?.drop();
  }, 30_000);
  const current = () => {
    if (!database) throw new Error('test database not created yet: read it inside a test or hook');
    return database;
  };
  return {
    get url() {
      return current().url;
    },
    get name() {
      return current().name;
    },
  };
}
