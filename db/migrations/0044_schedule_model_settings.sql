-- A schedule's runs carry its model and model settings (checked like a launch's), as a launch's do.
ALTER TABLE "schedules" ADD COLUMN "model_id" text;--> statement-breakpoint
ALTER TABLE "schedules" ADD COLUMN "model_settings" jsonb;
