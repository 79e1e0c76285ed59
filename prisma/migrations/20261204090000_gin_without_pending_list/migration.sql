-- The full-text index without GIN's pending list (fastupdate). Rows inserted with it on wait
-- in an unordered list that every search scans whole until a VACUUM merges it; the embedded
-- PGlite never runs autovacuum, so search time grew with everything ever ingested (measured:
-- 14 ms of a 17 ms full-text search at 10k passages, 0.1 ms once merged). Inserts merge at
-- once instead, a cost ingestion pays once per passage.
ALTER INDEX "chunks_content_tsv_idx" SET (fastupdate = off);
SELECT gin_clean_pending_list('chunks_content_tsv_idx');
