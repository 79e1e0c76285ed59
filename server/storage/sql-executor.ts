// The smallest SQL surface the migration runner needs, so one runner serves
// both PGlite (embedded) and node-postgres (server) connections.
import type { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';

export interface SqlExecutor {
  /** One statement with optional $1..$n parameters; returns the rows. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A script of several statements, no parameters (simple-query protocol). */
  exec(sql: string): Promise<void>;
}

export function pgliteExecutor(db: PGlite): SqlExecutor {
  return {
    async query<T>(sql: string, params?: unknown[]) {
      const result = await db.query<T>(sql, params);
      return result.rows;
    },
    async exec(sql: string) {
      await db.exec(sql);
    },
  };
}

/**
 * Needs a single dedicated connection (a `pg.Client` or a checked-out
 * `PoolClient`), never a pool: session advisory locks and BEGIN/COMMIT must
 * stay on one connection.
 */
export function pgClientExecutor(client: pg.Client | pg.PoolClient): SqlExecutor {
  return {
    async query<T>(sql: string, params?: unknown[]) {
      const result = await client.query(sql, params);
      return result.rows as T[];
    },
    async exec(sql: string) {
      // Without parameters node-postgres uses the simple-query protocol,
      // which accepts several statements in one string.
      await client.query(sql);
    },
  };
}
