CREATE TABLE "org_budgets" (
	"org_id" uuid PRIMARY KEY NOT NULL REFERENCES "organizations"("id") ON DELETE CASCADE,
	"run_max_tokens" bigint,
	"run_max_cost_usd" double precision,
	"monthly_max_tokens" bigint,
	"monthly_max_cost_usd" double precision,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "org_model_usage" (
	"org_id" uuid NOT NULL REFERENCES "organizations"("id") ON DELETE CASCADE,
	"period_start" date NOT NULL,
	"tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	CONSTRAINT "org_model_usage_pk" PRIMARY KEY ("org_id", "period_start")
);
