-- Issue 4: the data stash. Subtask results (JSON) by run and subtask, and the finished items
-- of mapped subtasks, written as each item finishes.
CREATE TABLE IF NOT EXISTS stash (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  value TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
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
  duration_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, subtask_id, item_index)
);
