-- Issue 6: the audit trail of tool calls (one row per call: allowed, denied or failed).
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  run_id TEXT,
  thread_id TEXT,
  subtask_id TEXT,
  agent TEXT NOT NULL,
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
  duration_ms REAL NOT NULL,
  attempts INTEGER NOT NULL,
  cached INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_run ON audit (run_id, id);
CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent, id);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
