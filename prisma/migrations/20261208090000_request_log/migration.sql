-- The console's request log (issue 27): one row per request on the API port, written behind
-- in batches, swept after REQUEST_LOG_RETENTION_DAYS.

-- CreateTable
CREATE TABLE "request_log" (
    "id" BIGSERIAL NOT NULL,
    "organization_id" UUID NOT NULL,
    "api_key_id" UUID,
    "trace_id" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "operation" TEXT,
    "status" INTEGER NOT NULL,
    "latency_ms" DOUBLE PRECISION NOT NULL,
    "route" TEXT,
    "model" TEXT,
    "provider" TEXT,
    "input_tokens" INTEGER NOT NULL DEFAULT 0,
    "output_tokens" INTEGER NOT NULL DEFAULT 0,
    "cost_micros" BIGINT NOT NULL DEFAULT 0,
    "error" TEXT,
    "request_body" TEXT,

    CONSTRAINT "request_log_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "request_log_organization_id_id_idx" ON "request_log"("organization_id", "id" DESC);

-- CreateIndex
CREATE INDEX "request_log_organization_id_at_idx" ON "request_log"("organization_id", "at");

-- CreateIndex
CREATE INDEX "request_log_at_idx" ON "request_log"("at");

-- AddForeignKey
ALTER TABLE "request_log" ADD CONSTRAINT "request_log_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
