-- Durable ingestion queue (issue 10).
--
-- A job carries the uploaded file itself (ingestion_job_parts, 1 MiB parts), committed
-- with the item before the upload is answered, so any instance sharing the database can
-- process it. Workers claim jobs with SELECT ... FOR UPDATE SKIP LOCKED and hold a lease
-- they renew while working; a job whose lease ran out (its worker died) is taken over.

-- AlterTable
ALTER TABLE "items" ADD COLUMN "failure_reason" TEXT;

-- AlterTable
ALTER TABLE "ingestion_jobs" ADD COLUMN "file_name" TEXT NOT NULL DEFAULT '',
ADD COLUMN "media_type" TEXT,
ADD COLUMN "size_bytes" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "content_hash" TEXT,
ADD COLUMN "run_after" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN "lease_owner" TEXT,
ADD COLUMN "lease_until" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "ingestion_job_parts" (
    "job_id" UUID NOT NULL,
    "ordinal" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "ingestion_job_parts_pkey" PRIMARY KEY ("job_id","ordinal")
);

-- CreateIndex
CREATE INDEX "ingestion_jobs_status_run_after_idx" ON "ingestion_jobs"("status", "run_after");

-- AddForeignKey
ALTER TABLE "ingestion_job_parts" ADD CONSTRAINT "ingestion_job_parts_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "ingestion_jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
