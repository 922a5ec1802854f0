-- Human approval of tool calls: one row per request a run's sidecar made, the run's `awaiting`,
-- and webhook deliveries that name the approval they report (a run may ask more than once).
CREATE TABLE "run_approvals" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"run_id" text NOT NULL REFERENCES "runs"("id") ON DELETE CASCADE,
	"sequence" integer NOT NULL,
	"tool" text NOT NULL,
	"arguments" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"timeout_seconds" integer NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"decided_at" timestamp with time zone,
	"decided_by" jsonb,
	"reason" text
);
--> statement-breakpoint
CREATE UNIQUE INDEX "run_approvals_run_sequence_uq" ON "run_approvals" USING btree ("run_id","sequence");
--> statement-breakpoint
CREATE INDEX "run_approvals_tenant_idx" ON "run_approvals" USING btree ("org_id","space_id","run_id");
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "awaiting" jsonb;
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "approval_id" text;
--> statement-breakpoint
DROP INDEX "webhook_deliveries_once_uq";
--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_once_uq" ON "webhook_deliveries" USING btree ("webhook_id","run_id","event") WHERE "approval_id" IS NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_approval_once_uq" ON "webhook_deliveries" USING btree ("webhook_id","approval_id","event") WHERE "approval_id" IS NOT NULL;
