DROP INDEX "end_users_space_idx";--> statement-breakpoint
DROP INDEX "runs_unsubmitted_idx";--> statement-breakpoint
CREATE INDEX "run_event_ids_created_idx" ON "run_event_ids" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "run_logs_created_idx" ON "run_logs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "runs_status_idx" ON "runs" USING btree ("org_id","space_id","status","created_at","id");--> statement-breakpoint
CREATE INDEX "runs_actor_idx" ON "runs" USING btree ("org_id","space_id","actor_user_id","created_at","id") WHERE end_user_id IS NULL;--> statement-breakpoint
CREATE INDEX "runs_end_user_idx" ON "runs" USING btree ("org_id","space_id","end_user_id","created_at","id") WHERE end_user_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "runs_inline_unpurged_idx" ON "runs" USING btree ("created_at") WHERE kind = 'inline' AND purged_at IS NULL;--> statement-breakpoint
CREATE INDEX "end_users_space_idx" ON "end_users" USING btree ("org_id","space_id","id" COLLATE "C");--> statement-breakpoint
CREATE INDEX "runs_unsubmitted_idx" ON "runs" USING btree ("created_at") WHERE submitted_at IS NULL AND status = 'pending';