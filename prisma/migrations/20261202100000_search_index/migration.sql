-- Search index (issue 10).
--
-- A collection records the embedding space its passages were indexed in, fixed when it is
-- first filled: vectors of different models or sizes are never compared.
ALTER TABLE "collections" ADD COLUMN "embedding_model" TEXT;
ALTER TABLE "collections" ADD COLUMN "embedding_dimensions" INTEGER;

-- Retrieval joins chunks to their live items (status, deletion, visibility) by item id.
CREATE INDEX "items_publisher_id_status_idx" ON "items"("publisher_id", "status");

-- Hand-written: pgvector is optional (see the init migration). "chunks"."embedding" is an
-- untyped vector, and HNSW needs a fixed size, so there is one partial expression index
-- per vector size: queries cast to vector(N) and filter on vector_dims(...) = N to use it.
-- 512 is the embedded model (local-embedding), 1536 OpenAI's text-embedding-3-small; a
-- space of another size is searched exactly until an index like these is added for it.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'chunks'
                  AND column_name = 'embedding' AND udt_name = 'vector') THEN
        CREATE INDEX IF NOT EXISTS "chunks_embedding_512_hnsw_idx" ON "chunks"
            USING hnsw ((("embedding")::vector(512)) vector_cosine_ops)
            WHERE vector_dims("embedding") = 512;
        CREATE INDEX IF NOT EXISTS "chunks_embedding_1536_hnsw_idx" ON "chunks"
            USING hnsw ((("embedding")::vector(1536)) vector_cosine_ops)
            WHERE vector_dims("embedding") = 1536;
    END IF;
END
$$;
