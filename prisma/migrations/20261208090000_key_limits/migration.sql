-- Issue 26 item 7: per-key limits. What a key may spend and call is the key's (api_keys);
-- what it has spent and holds is billing's (billing_key_pools, one row per key that has a
-- weekly cap or a credit share, created when one is set).

-- The key's weekly spending cap (null: none), its share of the organization's credit in
-- percent (null: none) and the models it may call (empty: every model).
ALTER TABLE "api_keys" ADD COLUMN "weekly_cap_micros" BIGINT;
ALTER TABLE "api_keys" ADD COLUMN "credit_share_percent" INTEGER;
ALTER TABLE "api_keys" ADD COLUMN "allowed_models" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[];
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_credit_share_percent_check" CHECK ("credit_share_percent" BETWEEN 1 AND 100);

-- A limited key's gate counters, as billing_accounts has them for the organization.
CREATE TABLE "billing_key_pools" (
    "api_key_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "reserved_micros" BIGINT NOT NULL DEFAULT 0,
    "week_start" TIMESTAMPTZ(3) NOT NULL DEFAULT '1970-01-05 00:00:00+00'::timestamptz,
    "week_spent_micros" BIGINT NOT NULL DEFAULT 0,
    "version" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "billing_key_pools_pkey" PRIMARY KEY ("api_key_id")
);

ALTER TABLE "billing_key_pools" ADD CONSTRAINT "billing_key_pools_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Whether a database hold also counts on its key's pool (released together by the sweep).
ALTER TABLE "billing_reservations" ADD COLUMN "key_held" BOOLEAN NOT NULL DEFAULT false;
