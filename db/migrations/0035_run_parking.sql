-- Parking a run that waits for a person's approval: the run keeps its own checkpoint (with the
-- pending tool calls) and no sandbox. parked_at: when the run last parked (a booted sandbox then
-- starts from the run's own checkpoint); park_requested_at: the platform asked the run's sidecar
-- to hand over its pending state for this request; resumed_at: the woken run took the decision
-- (once); pending_calls: how many tool calls the stored checkpoint holds pending.
ALTER TABLE "runs" ADD COLUMN "parked_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "run_approvals" ADD COLUMN "park_requested_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "run_approvals" ADD COLUMN "resumed_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "run_checkpoints" ADD COLUMN "pending_calls" integer DEFAULT 0 NOT NULL;
