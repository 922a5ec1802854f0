-- Functions applied after the migrations on every start (CREATE OR REPLACE: idempotent).

-- Admits a run atomically against the organization's concurrency cap and launch rate, then
-- inserts it. The organization row lock serializes launches of one organization across every
-- replica; each statement after it sees the runs committed before the lock was granted.
-- Returns 'admitted', 'concurrency' or 'rate'.
CREATE OR REPLACE FUNCTION admit_run(p_org uuid, p_max_concurrent int, p_rate int, p_minute bigint, p_run jsonb)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  active int;
  launched int;
BEGIN
  PERFORM 1 FROM organizations WHERE id = p_org FOR UPDATE;
  SELECT count(*) INTO active FROM runs WHERE org_id = p_org AND status IN ('pending', 'running');
  IF active >= p_max_concurrent THEN
    RETURN 'concurrency';
  END IF;
  SELECT count INTO launched FROM org_run_launches WHERE org_id = p_org AND minute = p_minute;
  IF coalesce(launched, 0) >= p_rate THEN
    RETURN 'rate';
  END IF;
  INSERT INTO org_run_launches AS l (org_id, minute, count) VALUES (p_org, p_minute, 1)
    ON CONFLICT (org_id, minute) DO UPDATE SET count = l.count + 1;
  INSERT INTO runs SELECT * FROM jsonb_populate_record(NULL::runs, p_run);
  RETURN 'admitted';
END;
$$;
