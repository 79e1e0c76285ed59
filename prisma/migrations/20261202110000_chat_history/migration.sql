-- Issue 10: Chat API v1 history pairs each answer with its question (query_id).

-- AlterTable
ALTER TABLE "messages" ADD COLUMN "query_id" UUID;
