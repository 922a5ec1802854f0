-- The dispatcher sends first attempts itself and starts a delivery's workflow only for retries;
-- its sweep finds retries whose workflow never started (a replica died in between) by their
-- overdue next attempt.
CREATE INDEX "webhook_deliveries_retry_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE status = 'pending' AND attempt_count > 0;
