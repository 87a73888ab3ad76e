-- The first schema: runs and their event log.
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
  active_ms INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS runs_thread ON runs (thread_id, created_at);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  at INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
