-- Unmetered usage is rolled up: a row counts the requests of one organization, key, operation,
-- model, provider and product settled within the same second (server/billing/usage-buffer.ts).
-- AlterTable
ALTER TABLE "usage_records" ADD COLUMN "calls" INTEGER NOT NULL DEFAULT 1,
ALTER COLUMN "trace_id" DROP NOT NULL;
