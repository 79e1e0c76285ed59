-- Stored Responses API answers (issue 11): `previous_response_id` continues a response of
-- the same organization; rows expire after the configured retention and are swept.

-- CreateTable
CREATE TABLE "responses" (
    "id" TEXT NOT NULL,
    "organization_id" UUID NOT NULL,
    "previous_response_id" TEXT,
    "model" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "input" JSONB NOT NULL,
    "output" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "responses_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "responses_organization_id_idx" ON "responses"("organization_id");

-- CreateIndex
CREATE INDEX "responses_expires_at_idx" ON "responses"("expires_at");

-- AddForeignKey
ALTER TABLE "responses" ADD CONSTRAINT "responses_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
