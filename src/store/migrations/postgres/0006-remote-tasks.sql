-- Issue 26: the task a remote A2A agent made for one of troupe's calls (SQLite migration 16).
CREATE TABLE IF NOT EXISTS remote_tasks (
  call_id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  url TEXT NOT NULL,
  task_id TEXT NOT NULL,
  context_id TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
