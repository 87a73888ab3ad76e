-- Issue 27 (SQLite's 18): forks, busy threads, runtime grants, the webhook outbox (delivered by
-- pg-boss jobs; the rows are what runs show reads), schedules, reflections, subtask durations,
-- retention's state.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS forked_from TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS waits_for TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS superseded_by TEXT;
CREATE INDEX IF NOT EXISTS runs_waits_for ON runs (waits_for) WHERE waits_for IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_retention ON runs (status, updated_at);
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  level TEXT NOT NULL,
  conditions TEXT,
  expires_at BIGINT,
  granted_by TEXT NOT NULL,
  reason TEXT,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT,
  revoked_by TEXT,
  revoke_reason TEXT,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS grants_agent ON grants (agent, created_at);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  event TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  delivered_at BIGINT,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_run ON webhook_deliveries (run_id, created_at);
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  task TEXT NOT NULL,
  request TEXT NOT NULL,
  owner TEXT,
  catch_up TEXT NOT NULL,
  source TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  last_tick BIGINT,
  last_run_id TEXT,
  last_fired_at BIGINT
);
CREATE TABLE IF NOT EXISTS reflections (
  run_id TEXT NOT NULL,
  iteration INTEGER NOT NULL,
  type TEXT NOT NULL,
  passed INTEGER NOT NULL,
  confidence DOUBLE PRECISION NOT NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (run_id, iteration)
);
CREATE INDEX IF NOT EXISTS reflections_at ON reflections (at);
CREATE TABLE IF NOT EXISTS duration_stats (
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  count BIGINT NOT NULL,
  total_ms DOUBLE PRECISION NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (agent, tool)
);
CREATE TABLE IF NOT EXISTS maintenance (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);
