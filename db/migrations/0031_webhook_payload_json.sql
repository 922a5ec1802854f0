-- A webhook delivery's body keeps the key order it was written in (json, not jsonb): a "full"
-- payload's data is the run as run_wire() writes it, the order every API answer uses; jsonb
-- sorted its keys by length. The sender re-writes the text compact (no PostgreSQL token spacing).
ALTER TABLE "webhook_deliveries" ALTER COLUMN "payload" SET DATA TYPE json USING "payload"::json;
