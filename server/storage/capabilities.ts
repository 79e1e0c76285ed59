// What the migrated database can do. pgvector is optional (see the init
// migration), so features that need it ask here instead of failing at query
// time. We look at the columns rather than the extension list: the column is
// what queries use, and it is absent if pgvector arrived after migrating.
import type { Logger } from 'pino';
import type { SqlExecutor } from './sql-executor.js';

export interface DatabaseCapabilities {
  /** `chunks.embedding` is a pgvector column: semantic search, grounded retrieval, recommendations */
  vector: boolean;
}

export const FEATURES_NEEDING_VECTOR = ['semantic search', 'grounded retrieval', 'recommendations'] as const;

export async function detectCapabilities(db: SqlExecutor): Promise<DatabaseCapabilities> {
  const rows = await db.query<{ udt_name: string }>(
    `SELECT udt_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'chunks'
        AND column_name = 'embedding'`,
  );
  return { vector: rows[0]?.udt_name === 'vector' };
}

/** One line at startup so operators see at once what is switched off and why. */
export function reportCapabilities(capabilities: DatabaseCapabilities, logger: Logger): void {
  if (!capabilities.vector) {
    logger.warn(
      { capabilities, disabled: FEATURES_NEEDING_VECTOR },
      `pgvector is not available in this database: ${FEATURES_NEEDING_VECTOR.join(', ')} are disabled ` +
        '(use a PostgreSQL server with the pgvector extension, or the embedded PGlite database)',
    );
  }
}
