CREATE TABLE "schedules" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"name" text NOT NULL,
	"cron_expression" text NOT NULL,
	"timezone" text NOT NULL,
	"input" jsonb,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"created_by" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"armed_generation" integer DEFAULT 0 NOT NULL,
	"next_run_at" timestamp with time zone,
	"last_fire" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "schedule_fires" (
	"schedule_id" text NOT NULL,
	"fire_at" timestamp with time zone NOT NULL,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"outcome" text NOT NULL,
	"run_id" text,
	"attempts" integer DEFAULT 1 NOT NULL,
	"error" jsonb,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "schedule_fires_schedule_id_fire_at_pk" PRIMARY KEY("schedule_id","fire_at")
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "schedule_fire_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "runs_schedule_fire_idx" ON "runs" USING btree ("schedule_id","schedule_fire_at") WHERE schedule_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "runs_schedule_idx" ON "runs" USING btree ("org_id","space_id","schedule_id","created_at","id") WHERE schedule_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "schedules_space_idx" ON "schedules" USING btree ("org_id","space_id","created_at","id");--> statement-breakpoint
CREATE INDEX "schedules_agent_idx" ON "schedules" USING btree ("org_id","agent_id");--> statement-breakpoint
CREATE INDEX "schedules_creator_idx" ON "schedules" USING btree ("org_id","created_by") WHERE enabled;--> statement-breakpoint
CREATE INDEX "schedules_unarmed_idx" ON "schedules" USING btree ("updated_at") WHERE armed_generation <> generation;
