-- The first schema: what SQLite reached by its migration 10 (runs, events, stash, audit, evals),
-- with the worker registry and the function that appends events.
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  task TEXT NOT NULL,
  status TEXT NOT NULL,
  stop_reason TEXT,
  request TEXT NOT NULL,
  answer TEXT,
  error TEXT,
  metrics TEXT,
  interrupt TEXT,
  pid INTEGER,
  host TEXT,
  active_ms BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  finished_at BIGINT,
  owner TEXT,
  idempotency_key TEXT,
  request_hash TEXT,
  suspended TEXT,
  pending_decision TEXT,
  started_at BIGINT,
  starts INTEGER NOT NULL DEFAULT 0,
  crashes INTEGER NOT NULL DEFAULT 0,
  eval_id TEXT,
  worker TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS runs_thread ON runs (thread_id, created_at, row_order);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at, row_order);
CREATE UNIQUE INDEX IF NOT EXISTS runs_idempotency ON runs (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_owner ON runs (owner, created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE INDEX IF NOT EXISTS runs_eval ON runs (eval_id) WHERE eval_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  type TEXT NOT NULL,
  at BIGINT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS stash (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  value BYTEA NOT NULL,
  bytes BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, subtask_id)
);
CREATE TABLE IF NOT EXISTS stash_items (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  item_index INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  round INTEGER NOT NULL,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  output TEXT,
  error TEXT,
  duration_ms BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, subtask_id, item_index)
);
CREATE TABLE IF NOT EXISTS audit (
  id BIGSERIAL PRIMARY KEY,
  at BIGINT NOT NULL,
  run_id TEXT,
  thread_id TEXT,
  subtask_id TEXT,
  agent TEXT NOT NULL,
  principal TEXT,
  tool TEXT NOT NULL,
  args TEXT NOT NULL,
  decision TEXT NOT NULL,
  status TEXT NOT NULL,
  level TEXT NOT NULL,
  grant_info TEXT,
  reason TEXT,
  result_preview TEXT,
  error_code TEXT,
  error TEXT,
  duration_ms DOUBLE PRECISION NOT NULL,
  attempts INTEGER NOT NULL,
  cached INTEGER NOT NULL,
  call_id TEXT,
  effect TEXT,
  outcome TEXT
);
CREATE INDEX IF NOT EXISTS audit_run ON audit (run_id, id);
CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent, id);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
CREATE INDEX IF NOT EXISTS audit_call ON audit (call_id, id) WHERE call_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_started ON audit (run_id, id) WHERE status = 'started';
CREATE TABLE IF NOT EXISTS evals (
  id TEXT PRIMARY KEY,
  owner TEXT,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  provider TEXT NOT NULL,
  total INTEGER NOT NULL,
  passed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  min_pass_rate DOUBLE PRECISION NOT NULL,
  concurrency INTEGER NOT NULL,
  suite TEXT NOT NULL,
  results TEXT,
  error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  finished_at BIGINT,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS evals_owner ON evals (owner, created_at);
CREATE TABLE IF NOT EXISTS workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  held INTEGER NOT NULL DEFAULT 0,
  takeovers BIGINT NOT NULL DEFAULT 0,
  draining BOOLEAN NOT NULL DEFAULT FALSE,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  stopped_at BIGINT
);
-- Appends a batch of events in one call: numbered per stream by the database (under a lock per
-- stream, taken in order, so any process may append), and a notification per stream on commit.
CREATE OR REPLACE FUNCTION troupe_append_events(p_streams TEXT[], p_types TEXT[], p_ats BIGINT[], p_data TEXT[])
RETURNS TABLE (out_stream TEXT, out_seq BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  counters JSONB := '{}'::jsonb;
  stream_id TEXT;
  top BIGINT;
  next_seq BIGINT;
  i INTEGER;
BEGIN
  FOR stream_id IN SELECT DISTINCT u FROM unnest(p_streams) AS u ORDER BY u LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('troupe.events:' || stream_id, 0));
    SELECT COALESCE(MAX(e.seq), 0) INTO top FROM events e WHERE e.run_id = stream_id;
    counters := counters || jsonb_build_object(stream_id, top);
  END LOOP;
  FOR i IN 1 .. COALESCE(array_length(p_streams, 1), 0) LOOP
    stream_id := p_streams[i];
    next_seq := (counters ->> stream_id)::BIGINT + 1;
    counters := jsonb_set(counters, ARRAY[stream_id], to_jsonb(next_seq));
    INSERT INTO events (run_id, seq, type, at, data) VALUES (stream_id, next_seq, p_types[i], p_ats[i], p_data[i]);
    out_stream := stream_id;
    out_seq := next_seq;
    RETURN NEXT;
  END LOOP;
  FOR stream_id IN SELECT jsonb_object_keys(counters) LOOP
    PERFORM pg_notify('troupe_events', stream_id);
  END LOOP;
END;
$$;
