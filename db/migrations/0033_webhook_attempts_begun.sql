-- A webhook attempt is recorded before it is sent: a row without its outcome (duration_ms NULL)
-- is under way, or was when its sender died. A pending delivery with no next attempt scheduled
-- has an attempt under way (or about to be); the sweep hands those left so too long to the
-- delivery's workflow.
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "duration_ms" DROP NOT NULL;--> statement-breakpoint
DROP INDEX "webhook_deliveries_open_idx";--> statement-breakpoint
CREATE INDEX "webhook_deliveries_open_idx" ON "webhook_deliveries" USING btree ("dispatched_at") WHERE status = 'pending' AND next_attempt_at IS NULL;
