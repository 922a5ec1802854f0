-- A run's own model settings (temperature, reasoning_effort), checked at launch against its model.
ALTER TABLE "runs" ADD COLUMN "model_settings" jsonb;
