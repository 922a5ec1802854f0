DROP INDEX "runs_space_created_idx";--> statement-breakpoint
DROP INDEX "runs_agent_idx";--> statement-breakpoint
CREATE INDEX "runs_space_created_idx" ON "runs" USING btree ("org_id","space_id","created_at","id");--> statement-breakpoint
CREATE INDEX "runs_agent_idx" ON "runs" USING btree ("org_id","space_id","agent_id","created_at","id");