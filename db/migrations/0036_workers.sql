-- The fleet of sandbox hosts (issue 31): each worker process records itself and beats; a run records
-- the worker its sandbox was placed on, and every later step that touches the sandbox goes there.
CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"endpoint_url" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"draining" boolean DEFAULT false NOT NULL
);--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "worker_id" text;--> statement-breakpoint
CREATE INDEX "runs_worker_open_idx" ON "runs" USING btree ("worker_id") WHERE status IN ('pending', 'running');
