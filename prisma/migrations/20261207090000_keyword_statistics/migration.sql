-- Keyword statistics for Okapi BM25 (issue 25), replacing PostgreSQL full text (ts_rank_cd
-- over a generated tsvector). Terms come from the platform's own analyzer
-- (server/data/search/analyzer.ts: identifiers kept whole as well as split, stemming), so
-- they are written by the application, the same on PGlite and PostgreSQL, with no extension.
--
-- A passage keeps its term frequencies (for scoring the passages that reach the candidate
-- set); a document's are summed into "item_terms" when the item is published: one row per
-- (publisher, term, document), so a query reads the posting list of each of its terms within
-- the tenants it searches, and each term's document frequency is that list's length.
-- Passages indexed before this migration have no terms yet: the server analyzes them once,
-- in the background, at its first start (server/data/search/keyword-backfill.ts).

-- AlterTable
ALTER TABLE "chunks" ADD COLUMN "terms" JSONB,
ADD COLUMN "term_count" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "items" ADD COLUMN "term_count" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "title_terms" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateTable
CREATE TABLE "item_terms" (
    "publisher_id" UUID NOT NULL,
    "term" TEXT NOT NULL,
    "item_id" UUID NOT NULL,
    "tf" INTEGER NOT NULL,
    "doc_terms" INTEGER NOT NULL,

    CONSTRAINT "item_terms_pkey" PRIMARY KEY ("publisher_id","term","item_id")
);

-- CreateIndex
CREATE INDEX "item_terms_item_id_idx" ON "item_terms"("item_id");

-- AddForeignKey
ALTER TABLE "item_terms" ADD CONSTRAINT "item_terms_item_id_fkey" FOREIGN KEY ("item_id") REFERENCES "items"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Full text is replaced: its generated column cost ~80 µs of every passage insert.
DROP INDEX "chunks_content_tsv_idx";
ALTER TABLE "chunks" DROP COLUMN "content_tsv";

-- Hand-written: a document's postings follow its passages whatever code path changes them.
-- Passages are only ever deleted for a whole item (re-indexed, deleted), so deleting any
-- passage of an item forgets the item's postings until it is published again; and a passage
-- moved to another publisher moves its item's postings with it.
CREATE FUNCTION "item_terms_forget"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "item_terms" WHERE "item_id" IN (SELECT DISTINCT "item_id" FROM old_rows);
    UPDATE "items" SET "term_count" = 0 WHERE "id" IN (SELECT DISTINCT "item_id" FROM old_rows) AND "term_count" <> 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER "chunks_forget_item_terms" AFTER DELETE ON "chunks"
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "item_terms_forget"();

CREATE FUNCTION "item_terms_follow_publisher"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "item_terms" t SET "publisher_id" = n."publisher_id"
      FROM (SELECT DISTINCT "item_id", "publisher_id" FROM new_rows) n
     WHERE t."item_id" = n."item_id" AND t."publisher_id" <> n."publisher_id";
    RETURN NULL;
END
$$;

CREATE TRIGGER "chunks_move_item_terms" AFTER UPDATE ON "chunks"
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "item_terms_follow_publisher"();
