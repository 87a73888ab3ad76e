-- Issue 27: operating troupe over time. On runs: forked_from (the run and checkpoint a fork
-- started from, as JSON), waits_for (a queued run waits for this run of its thread to stop:
-- --on-busy enqueue), superseded_by (the run that asked this one to stop: --on-busy interrupt).
-- grants: runtime grants (troupe grants), revoked rows kept so a denial can name them.
-- webhook_deliveries: the webhook outbox. schedules: cron schedules and the last tick fired.
-- reflections: each critic verdict by type; duration_stats: subtask durations by agent and tool
-- (plan estimates); maintenance: retention's state (the last gc).
ALTER TABLE runs ADD COLUMN forked_from TEXT;
ALTER TABLE runs ADD COLUMN waits_for TEXT;
ALTER TABLE runs ADD COLUMN superseded_by TEXT;
CREATE INDEX IF NOT EXISTS runs_waits_for ON runs (waits_for) WHERE waits_for IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_retention ON runs (status, updated_at);
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  level TEXT NOT NULL,
  conditions TEXT,
  expires_at INTEGER,
  granted_by TEXT NOT NULL,
  reason TEXT,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER,
  revoked_by TEXT,
  revoke_reason TEXT
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
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER
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
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_tick INTEGER,
  last_run_id TEXT,
  last_fired_at INTEGER
);
CREATE TABLE IF NOT EXISTS reflections (
  run_id TEXT NOT NULL,
  iteration INTEGER NOT NULL,
  type TEXT NOT NULL,
  passed INTEGER NOT NULL,
  confidence REAL NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (run_id, iteration)
);
CREATE INDEX IF NOT EXISTS reflections_at ON reflections (at);
CREATE TABLE IF NOT EXISTS duration_stats (
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  count INTEGER NOT NULL,
  total_ms REAL NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent, tool)
);
CREATE TABLE IF NOT EXISTS maintenance (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
