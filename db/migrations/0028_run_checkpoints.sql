-- A run resumed from another's last checkpoint names it; each run keeps only its latest checkpoint
-- (the conversation and the workspace files it changed, sealed: tool results may hold secrets).
ALTER TABLE "runs" ADD COLUMN "resumed_from" text;--> statement-breakpoint
CREATE TABLE "run_checkpoints" (
	"run_id" text PRIMARY KEY NOT NULL REFERENCES "runs"("id") ON DELETE CASCADE,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"step" integer NOT NULL,
	"state" text NOT NULL,
	"bytes" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
