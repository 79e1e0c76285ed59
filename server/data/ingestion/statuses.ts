// The item status values of the public platform (real-platform.md) that ingestion moves an
// item through, and the states of the job that carries it.
//
// An uploaded file's item: QUEUED → FETCHING (its bytes read back from the database) →
// NORMALIZING (parsed to text) → CHUNKING → EMBEDDING → COMPLETED, or FAILED with a reason.
// Publishing the staged passages and COMPLETED are one transaction (the chunk index's), so
// the platform's SYNCED and ENRICHED are never observed on their own, and an item is
// searchable exactly when it is COMPLETED. STARTED and TRANSCRIBING (audio) are not used.
import { SEARCHABLE_STATUS } from '../search/pg-chunk-index.js';

export const ItemStatus = {
  QUEUED: 'QUEUED',
  FETCHING: 'FETCHING',
  NORMALIZING: 'NORMALIZING',
  CHUNKING: 'CHUNKING',
  EMBEDDING: 'EMBEDDING',
  COMPLETED: SEARCHABLE_STATUS,
  FAILED: 'FAILED',
} as const;
export type ItemStatus = (typeof ItemStatus)[keyof typeof ItemStatus];

/** QUEUED (waiting, maybe until run_after) → RUNNING (leased) → DONE | FAILED; SUPERSEDED by a newer upload of the item. */
export const JobStatus = {
  QUEUED: 'QUEUED',
  RUNNING: 'RUNNING',
  DONE: 'DONE',
  FAILED: 'FAILED',
  SUPERSEDED: 'SUPERSEDED',
} as const;
