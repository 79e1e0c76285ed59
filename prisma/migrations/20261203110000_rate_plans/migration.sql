-- Issue 12: rate limits per plan. The organization's plan (RATE_LIMIT_PLANS names them)
-- supplies its default quotas; its rate_limits rows override them. null: the default plan.
ALTER TABLE "organizations" ADD COLUMN "rate_plan" TEXT;
