-- Issue 12: crash reconciliation by instance, and versions for Redis hot counters.

-- One row per running process (an incarnation of an instance): holds record it, a heartbeat
-- keeps it alive; the holds of one whose heartbeat stopped are released.
CREATE TABLE "billing_instances" (
    "incarnation" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "billing_instances_pkey" PRIMARY KEY ("incarnation")
);

CREATE INDEX "billing_instances_instance_id_idx" ON "billing_instances"("instance_id");
CREATE INDEX "billing_instances_heartbeat_at_idx" ON "billing_instances"("heartbeat_at");

-- The incarnation that took a hold (null: taken before this migration).
ALTER TABLE "billing_reservations" ADD COLUMN "incarnation" UUID;
CREATE INDEX "billing_reservations_incarnation_idx" ON "billing_reservations"("incarnation") WHERE "settled_at" IS NULL;

-- Bumped by every change of what the gates read, so a cached copy (Redis) knows which is newer.
ALTER TABLE "billing_accounts" ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "coding_plans" ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0;
