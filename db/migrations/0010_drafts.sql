ALTER TABLE "runs" ADD COLUMN "draft_integrity" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "draft_snapshot" jsonb;
