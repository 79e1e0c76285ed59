-- Issue 12: metering, prepaid credit gate, weekly cap, coding-agent plans, rate limits.

-- AlterTable
ALTER TABLE "organizations" ADD COLUMN "billing_mode" TEXT NOT NULL DEFAULT 'unmetered',
ADD COLUMN "weekly_cap_micros" BIGINT;

-- AlterTable
ALTER TABLE "usage_records" ADD COLUMN "billed_micros" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "product" TEXT,
ADD COLUMN "reservation_id" UUID;

-- CreateTable
CREATE TABLE "billing_accounts" (
    "organization_id" UUID NOT NULL,
    "balance_micros" BIGINT NOT NULL DEFAULT 0,
    "reserved_micros" BIGINT NOT NULL DEFAULT 0,
    "week_start" TIMESTAMPTZ(3) NOT NULL DEFAULT '1970-01-05 00:00:00+00'::timestamptz,
    "week_spent_micros" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "billing_accounts_pkey" PRIMARY KEY ("organization_id")
);

-- CreateTable
CREATE TABLE "billing_reservations" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "organization_id" UUID NOT NULL,
    "api_key_id" UUID,
    "operation" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "product" TEXT,
    "estimate_micros" BIGINT NOT NULL,
    "trace_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "settled_at" TIMESTAMPTZ(3),
    "outcome" TEXT,

    CONSTRAINT "billing_reservations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "coding_plans" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "organization_id" UUID NOT NULL,
    "product" TEXT NOT NULL,
    "allowance_micros" BIGINT NOT NULL,
    "period" TEXT NOT NULL DEFAULT 'month',
    "period_start" TIMESTAMPTZ(3) NOT NULL DEFAULT '1970-01-01 00:00:00+00'::timestamptz,
    "used_micros" BIGINT NOT NULL DEFAULT 0,
    "reserved_micros" BIGINT NOT NULL DEFAULT 0,
    "topup_available" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "coding_plans_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "rate_limits" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "organization_id" UUID NOT NULL,
    "api_key_id" UUID,
    "requests_per_minute" INTEGER,
    "tokens_per_minute" INTEGER,

    CONSTRAINT "rate_limits_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "billing_reservations_settled_at_created_at_idx" ON "billing_reservations"("settled_at", "created_at");

-- CreateIndex
CREATE INDEX "billing_reservations_organization_id_created_at_idx" ON "billing_reservations"("organization_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "coding_plans_organization_id_product_key" ON "coding_plans"("organization_id", "product");

-- CreateIndex
CREATE UNIQUE INDEX "rate_limits_api_key_id_key" ON "rate_limits"("api_key_id");

-- CreateIndex
CREATE INDEX "rate_limits_organization_id_idx" ON "rate_limits"("organization_id");

-- One organization-wide row per organization (not expressible in schema.prisma).
CREATE UNIQUE INDEX "rate_limits_organization_wide_key" ON "rate_limits"("organization_id") WHERE "api_key_id" IS NULL;

-- AddForeignKey
ALTER TABLE "billing_accounts" ADD CONSTRAINT "billing_accounts_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "billing_reservations" ADD CONSTRAINT "billing_reservations_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "coding_plans" ADD CONSTRAINT "coding_plans_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "rate_limits" ADD CONSTRAINT "rate_limits_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "rate_limits" ADD CONSTRAINT "rate_limits_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Existing credit: the counters start from the ledger.
INSERT INTO "billing_accounts" ("organization_id", "balance_micros")
SELECT "organization_id", SUM("amount_micros") FROM "credit_ledger" GROUP BY "organization_id";
