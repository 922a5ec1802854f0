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
  inserted runs;
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
  INSERT INTO runs SELECT * FROM jsonb_populate_record(NULL::runs, p_run) RETURNING * INTO inserted;
  PERFORM announce_run_status(inserted);
  RETURN 'admitted';
END;
$$;

-- A timestamp as the wire writes it: UTC, ISO 8601, milliseconds (truncated, as a JS Date holds it).
CREATE OR REPLACE FUNCTION wire_time(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_char(date_trunc('milliseconds', t) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- The run resource as it goes on the wire, built where the row is: reads send this text as it is,
-- so a page of runs costs the API no row parsing and no serialization. Same shape as toRunWire()
-- (api/services/runs/records.ts), which builds it for a run still in memory; a test holds the two
-- equal.
CREATE OR REPLACE FUNCTION run_wire(r runs) RETURNS json LANGUAGE sql STABLE PARALLEL SAFE AS $$
  -- `awaiting` (what a running run waits for) is appended only while it waits: absent otherwise.
  SELECT CASE WHEN r.awaiting IS NULL THEN base.w
    ELSE (left(base.w::text, -1) || ', "awaiting" : ' || json_build_object('kind', r.awaiting->>'kind',
      'approval_id', r.awaiting->>'approval_id', 'since', r.awaiting->>'since', 'parked', r.awaiting->'parked')::text || '}')::json END
  FROM (SELECT json_build_object(
    'id', r.id, 'object', 'run', 'status', r.status, 'kind', r.kind, 'packageId', r.agent_id,
    'agent_version', r.agent_version,
    'source', CASE WHEN r.kind = 'inline' THEN NULL WHEN r.draft_integrity IS NOT NULL THEN 'draft' ELSE 'published' END,
    'draft_integrity', r.draft_integrity, 'spaceId', r.space_id, 'input', r.input,
    'result', CASE WHEN r.status = 'success' THEN json_build_object('output', r.output) END,
    'error', r.error,
    'triggered_by', json_build_object('kind', r.trigger_kind, 'userId', r.actor_user_id, 'api_key_id', r.api_key_id,
      'end_user_id', r.end_user_id, 'schedule_id', r.schedule_id),
    'rerun_of', r.rerun_of, 'resumed_from', r.resumed_from, 'model_id', r.model_id, 'model_settings', r.model_settings, 'timeout_seconds', r.timeout_seconds,
    'cost', json_build_object('usd', r.cost_usd, 'prompt_tokens', r.prompt_tokens, 'completion_tokens', r.completion_tokens),
    'createdAt', wire_time(r.created_at), 'started_at', wire_time(r.started_at), 'finished_at', wire_time(r.finished_at),
    'duration_ms', ((extract(epoch FROM date_trunc('milliseconds', r.finished_at))
      - extract(epoch FROM date_trunc('milliseconds', r.started_at))) * 1000)::bigint) AS w) base
$$;

-- Announces a run's status on the run_status channel, in the transaction that changes it, so every
-- API instance hears committed changes in commit order (long polls, realtime streams). The notice
-- names the run, its space and who may read it, and carries its wire (run_wire) when the whole fits
-- in a NOTIFY; a larger run travels by reference: listeners read its wire by id.
CREATE OR REPLACE FUNCTION announce_run_status(r runs) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  notice text;
  wire text;
BEGIN
  notice := json_build_object('id', r.id, 'org_id', r.org_id, 'space_id', r.space_id, 'status', r.status,
    'agent_id', r.agent_id, 'actor_user_id', r.actor_user_id, 'end_user_id', r.end_user_id)::text;
  wire := run_wire(r)::text;
  IF octet_length(notice) + octet_length(wire) < 7900 THEN
    notice := left(notice, -1) || ', "wire" : ' || wire || '}';
  END IF;
  PERFORM pg_notify('run_status', notice);
END;
$$;

CREATE OR REPLACE FUNCTION announce_run_status_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM announce_run_status(NEW);
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER runs_status_announced
  AFTER UPDATE OF status ON runs FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION announce_run_status_change();

-- Applies one verified, not replayed event of a run whose sink is open: notes liveness, stores what
-- the event carries, and moves a pending run to running on 'started'. p_data is the event's data as
-- the API normalized it. Returns 'started', 'terminal' or 'recorded'. Shared by record_run_event
-- and record_run_events, which check the sink and the message id first.
CREATE OR REPLACE FUNCTION apply_run_event(p_run text, p_sequence int, p_type text, p_data jsonb)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  stored int;
BEGIN
  IF p_type = 'started' THEN
    UPDATE runs SET status = 'running', started_at = COALESCE(started_at, now())
      WHERE id = p_run AND status = 'pending';
    RETURN 'started';
  ELSIF p_type = 'log' THEN
    INSERT INTO run_logs (run_id, sequence, level, message, data)
      VALUES (p_run, p_sequence, p_data->>'level', p_data->>'message', p_data->'data') ON CONFLICT DO NOTHING;
  ELSIF p_type = 'metric' THEN
    INSERT INTO run_usage (run_id, sequence, model, prompt_tokens, completion_tokens, cost_usd)
      VALUES (p_run, p_sequence, p_data->>'model', (p_data->>'prompt_tokens')::int, (p_data->>'completion_tokens')::int, (p_data->>'cost_usd')::float8)
      ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS stored = ROW_COUNT;
    IF stored > 0 THEN
      UPDATE runs SET prompt_tokens = prompt_tokens + (p_data->>'prompt_tokens')::int,
        completion_tokens = completion_tokens + (p_data->>'completion_tokens')::int,
        cost_usd = cost_usd + (p_data->>'cost_usd')::float8
        WHERE id = p_run;
    END IF;
  ELSIF p_type = 'output' THEN
    UPDATE runs SET pending_output = COALESCE(p_data->'output', 'null'::jsonb) WHERE id = p_run;
  ELSIF p_type IN ('completed', 'failed') THEN
    RETURN 'terminal';
  END IF;
  -- heartbeat, and kinds a newer runner may send: liveness is recorded by the caller
  RETURN 'recorded';
END;
$$;

-- The sink check of both recorders: 'unknown' (the run is gone), 'closed' (it has ended), 'expired'
-- (its sink has expired), 'moved' (p_placement, the worker whose sandbox posted, is not the worker
-- the run is placed on: a sandbox of a lost worker, the run booted again elsewhere), 'replayed'
-- (the message id was accepted before), else NULL with the message id stored and liveness noted up
-- to p_last_sequence. A NULL placement (a remote runner, a sandbox outside a fleet) is not checked.
-- Signatures the functions below had before a sandbox's placement was checked (dropped so a call
-- names one function only).
DROP FUNCTION IF EXISTS open_run_sink(text, text, int);
DROP FUNCTION IF EXISTS record_run_events(text, text, jsonb);

CREATE OR REPLACE FUNCTION open_run_sink(p_run text, p_message text, p_last_sequence int, p_placement text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  sink record;
  stored int;
BEGIN
  SELECT r.status, r.sink_expires_at, r.worker_id INTO sink FROM runs r WHERE r.id = p_run;
  IF NOT FOUND THEN
    RETURN 'unknown';
  ELSIF sink.status IN ('success', 'failed', 'timeout', 'cancelled') THEN
    RETURN 'closed';
  ELSIF sink.sink_expires_at <= now() THEN
    RETURN 'expired';
  ELSIF p_placement IS NOT NULL AND sink.worker_id IS DISTINCT FROM p_placement THEN
    RETURN 'moved';
  END IF;
  INSERT INTO run_event_ids (run_id, message_id) VALUES (p_run, p_message) ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS stored = ROW_COUNT;
  IF stored = 0 THEN
    RETURN 'replayed';
  END IF;
  -- the placement checked again under the run's row lock: a placement committed since the read
  -- above (the run moved to another worker) wins, and this message is not kept
  UPDATE runs SET last_event_at = now(), last_sequence = GREATEST(last_sequence, p_last_sequence)
    WHERE id = p_run AND (p_placement IS NULL OR worker_id = p_placement);
  IF NOT FOUND THEN
    DELETE FROM run_event_ids WHERE run_id = p_run AND message_id = p_message;
    RETURN 'moved';
  END IF;
  RETURN NULL;
END;
$$;

-- The ending's check data: the pending output and the agent's output schema, which the API checks.
CREATE OR REPLACE FUNCTION run_ending_check(p_run text)
RETURNS TABLE (pending_output jsonb, output_schema jsonb) LANGUAGE sql STABLE AS $$
  SELECT r.pending_output,
      CASE WHEN r.kind = 'inline' THEN r.inline_manifest->'output'->'schema'
           WHEN r.draft_snapshot IS NOT NULL THEN r.draft_snapshot->'manifest'->'output'->'schema'
           ELSE (SELECT v.manifest->'output'->'schema' FROM package_versions v
                  WHERE v.org_id = r.org_id AND v.package_id = r.agent_id AND v.version = r.agent_version) END
    FROM runs r WHERE r.id = p_run;
$$;

-- Records one verified run event in a single round trip: refuses an event for a run that is gone
-- ('unknown'), has ended ('closed') or whose sink has expired ('expired'), refuses a replayed
-- message id ('replayed'), else applies it (apply_run_event). Returns those refusals, 'started',
-- 'terminal' (with the pending output and the agent's output schema) or 'recorded'.
CREATE OR REPLACE FUNCTION record_run_event(p_run text, p_message text, p_sequence int, p_type text, p_data jsonb)
RETURNS TABLE (outcome text, pending_output jsonb, output_schema jsonb) LANGUAGE plpgsql AS $$
DECLARE
  refused text;
  applied text;
BEGIN
  refused := open_run_sink(p_run, p_message, p_sequence, NULL);
  IF refused IS NOT NULL THEN
    RETURN QUERY SELECT refused, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  applied := apply_run_event(p_run, p_sequence, p_type, p_data);
  IF applied = 'terminal' THEN
    RETURN QUERY SELECT 'terminal'::text, c.pending_output, c.output_schema FROM run_ending_check(p_run) c;
    RETURN;
  END IF;
  RETURN QUERY SELECT applied, NULL::jsonb, NULL::jsonb;
END;
$$;

-- Records a batch of verified run events posted as one signed message, in one round trip and one
-- transaction: the sink check and the replay refusal hold for the whole message (a replayed batch
-- records nothing), then each event is applied in the order given (p_events: a JSON array of
-- {sequence, type, data}, data normalized by the API; the API puts an ending only last). Returns
-- the refusal, or 'terminal' (with the ending's check data) when the batch carries the run's end,
-- else 'recorded'; started tells whether it carried the runner's 'started'. p_placement: the worker
-- whose sandbox posted the batch (open_run_sink), or NULL.
CREATE OR REPLACE FUNCTION record_run_events(p_run text, p_message text, p_events jsonb, p_placement text)
RETURNS TABLE (outcome text, started boolean, pending_output jsonb, output_schema jsonb) LANGUAGE plpgsql AS $$
DECLARE
  refused text;
  applied text;
  e jsonb;
  saw_start boolean := false;
BEGIN
  refused := open_run_sink(p_run, p_message, (SELECT max((x->>'sequence')::int) FROM jsonb_array_elements(p_events) x), p_placement);
  IF refused IS NOT NULL THEN
    RETURN QUERY SELECT refused, false, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  FOR e IN SELECT x FROM jsonb_array_elements(p_events) x LOOP
    applied := apply_run_event(p_run, (e->>'sequence')::int, e->>'type', COALESCE(e->'data', '{}'::jsonb));
    IF applied = 'started' THEN
      saw_start := true;
    ELSIF applied = 'terminal' THEN
      RETURN QUERY SELECT 'terminal'::text, saw_start, c.pending_output, c.output_schema FROM run_ending_check(p_run) c;
      RETURN;
    END IF;
  END LOOP;
  RETURN QUERY SELECT 'recorded'::text, saw_start, NULL::jsonb, NULL::jsonb;
END;
$$;

-- Announces every committed change to what a run's wire (run_wire) shows, with the run's space,
-- so each API instance drops the run reads it cached for that space (api/services/runs/read-cache.ts).
-- Columns outside the wire (liveness, the sink, the event secret) change without a notification.
CREATE OR REPLACE FUNCTION announce_run_wire_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('run_wire_changed', CASE WHEN TG_OP = 'DELETE' THEN OLD.space_id ELSE NEW.space_id END);
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER runs_wire_changed
  AFTER INSERT OR DELETE OR UPDATE OF id, org_id, space_id, agent_id, agent_version, status, kind, input, output, error,
    trigger_kind, actor_user_id, api_key_id, end_user_id, schedule_id, rerun_of, resumed_from, model_id, model_settings, timeout_seconds,
    prompt_tokens, completion_tokens, cost_usd, created_at, started_at, finished_at
  ON runs FOR EACH ROW EXECUTE FUNCTION announce_run_wire_change();

-- A run that ended success or cancelled cannot be resumed: its checkpoint (db/run-checkpoints.ts)
-- goes in the transaction of the ending, whichever writer ends it (finalizeRun, record_run_event).
CREATE OR REPLACE FUNCTION drop_unresumable_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM run_checkpoints WHERE run_id = NEW.id;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER runs_checkpoint_dropped
  AFTER UPDATE OF status ON runs FOR EACH ROW
  WHEN (NEW.status IN ('success', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION drop_unresumable_checkpoint();

-- Every model call recorded in a run's cost ledger (run_usage: the sidecar's metrics and the LLM
-- proxy's calls) also counts toward its organization's usage of the calendar month (UTC), which the
-- organization's monthly budget is checked against (api/services/budgets.ts).
CREATE OR REPLACE FUNCTION count_org_model_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO org_model_usage (org_id, period_start, tokens, cost_usd)
    SELECT r.org_id, (date_trunc('month', now() AT TIME ZONE 'UTC'))::date,
           NEW.prompt_tokens::bigint + NEW.completion_tokens::bigint, COALESCE(NEW.cost_usd, 0)
      FROM runs r WHERE r.id = NEW.run_id
  ON CONFLICT (org_id, period_start) DO UPDATE
    SET tokens = org_model_usage.tokens + EXCLUDED.tokens, cost_usd = org_model_usage.cost_usd + EXCLUDED.cost_usd;
  RETURN NULL;
END;
$$;

-- An id as lib/ids.ts newId() makes it: the prefix, 8 base62 characters of the creation time in
-- ms, 14 random ones; ids sort in creation order (cursor pagination relies on it).
CREATE OR REPLACE FUNCTION sorted_id(p_prefix text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  out text := '';
BEGIN
  FOR i IN 1..8 LOOP
    out := substr(alphabet, (ms % 62)::int + 1, 1) || out;
    ms := ms / 62;
  END LOOP;
  FOR i IN 1..14 LOOP
    out := out || substr(alphabet, floor(random() * 62)::int + 1, 1);
  END LOOP;
  RETURN p_prefix || '_' || out;
END;
$$;

-- The run's committed status change, in its own transaction: one delivery row per matching
-- enabled webhook (unique per webhook, run and event, so a change is delivered once whoever hears
-- it), and for a run's ending a notification to the person who launched or scheduled it.
-- Deliveries are announced on webhook_deliveries; the webhooks module's dispatcher starts one
-- durable invocation per row.
CREATE OR REPLACE FUNCTION runs_status_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ev text;
  added int;
  verb text;
BEGIN
  IF NEW.status NOT IN ('running', 'success', 'failed', 'timeout', 'cancelled') THEN
    RETURN NULL;
  END IF;
  ev := CASE NEW.status WHEN 'running' THEN 'run.started' ELSE 'run.' || NEW.status END;
  IF EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = NEW.org_id AND w.enabled) THEN
    INSERT INTO webhook_deliveries (id, org_id, webhook_id, run_id, event, payload)
      SELECT sorted_id('whd'), NEW.org_id, w.id, NEW.id, ev,
             json_build_object('type', ev, 'timestamp', wire_time(now()), 'data',
               CASE WHEN w.payload_mode = 'full' THEN run_wire(NEW)
                    ELSE json_build_object('id', NEW.id, 'object', 'run', 'status', NEW.status, 'packageId', NEW.agent_id,
                           'spaceId', NEW.space_id, 'createdAt', wire_time(NEW.created_at), 'started_at', wire_time(NEW.started_at),
                           'finished_at', wire_time(NEW.finished_at),
                           'duration_ms', ((extract(epoch FROM date_trunc('milliseconds', NEW.finished_at))
                             - extract(epoch FROM date_trunc('milliseconds', NEW.started_at))) * 1000)::bigint) END)
        FROM webhooks w
       WHERE w.org_id = NEW.org_id AND w.enabled
         AND (w.space_id IS NULL OR w.space_id = NEW.space_id)
         AND ev = ANY (w.events)
         AND (w.package_id IS NULL OR w.package_id = NEW.agent_id)
      ON CONFLICT (webhook_id, run_id, event) WHERE approval_id IS NULL DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added > 0 THEN
      PERFORM pg_notify('webhook_deliveries', '');
    END IF;
  END IF;
  IF NEW.status <> 'running' AND NEW.actor_user_id IS NOT NULL AND NEW.end_user_id IS NULL THEN
    verb := CASE NEW.status WHEN 'success' THEN 'succeeded' WHEN 'failed' THEN 'failed' WHEN 'timeout' THEN 'timed out' ELSE 'was cancelled' END;
    INSERT INTO notifications (id, org_id, space_id, user_id, kind, title, body, subject)
      VALUES (sorted_id('ntf'), NEW.org_id, NEW.space_id, NEW.actor_user_id, 'run_ended',
              'Run of ' || NEW.agent_id || ' ' || verb,
              'Run ' || NEW.id || ' of ' || NEW.agent_id || ' ended ' || NEW.status
                || CASE WHEN NEW.error ? 'code' THEN ' (' || (NEW.error->>'code') || ')' ELSE '' END || '.',
              jsonb_strip_nulls(jsonb_build_object('run_id', NEW.id, 'package_id', NEW.agent_id, 'schedule_id', NEW.schedule_id)));
  END IF;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER run_usage_counts_for_org AFTER INSERT ON run_usage
  FOR EACH ROW EXECUTE FUNCTION count_org_model_usage();

-- One LLM-proxy call in the run's cost ledger. Proxy rows take negative sequences (the run's
-- events own the positive ones); the run row is locked first, so concurrent calls number in turn.
CREATE OR REPLACE FUNCTION record_proxy_usage(p_run text, p_model text, p_prompt int, p_completion int, p_cost float8)
RETURNS TABLE (prompt_tokens bigint, completion_tokens bigint, cost_usd float8) LANGUAGE plpgsql AS $$
DECLARE
  next_seq int;
BEGIN
  PERFORM 1 FROM runs WHERE id = p_run FOR UPDATE;
  SELECT COALESCE(MIN(u.sequence), 0) - 1 INTO next_seq FROM run_usage u WHERE u.run_id = p_run AND u.sequence < 0;
  INSERT INTO run_usage (run_id, sequence, model, prompt_tokens, completion_tokens, cost_usd)
    VALUES (p_run, next_seq, p_model, p_prompt, p_completion, p_cost);
  RETURN QUERY UPDATE runs r SET prompt_tokens = r.prompt_tokens + p_prompt, completion_tokens = r.completion_tokens + p_completion,
      cost_usd = r.cost_usd + p_cost
    WHERE r.id = p_run RETURNING r.prompt_tokens, r.completion_tokens, r.cost_usd;
END;
$$;

CREATE OR REPLACE TRIGGER runs_status_outbox_update AFTER UPDATE OF status ON runs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION runs_status_outbox();

CREATE OR REPLACE TRIGGER runs_status_outbox_insert AFTER INSERT ON runs
  FOR EACH ROW WHEN (NEW.status <> 'pending') EXECUTE FUNCTION runs_status_outbox();
