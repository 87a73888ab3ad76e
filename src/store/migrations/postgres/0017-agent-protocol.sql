-- Issue 36 (SQLite's 28): the Agent Protocol (src/server/agent-protocol/). A thread a key made
-- there with its metadata (JSONB, compared key by key in searches), by the thread's key; a run
-- made there with its metadata and multitask strategy. Both go with the thread's or the run's
-- deletion (retention). The index on runs serves the listing of a key's threads.
CREATE TABLE IF NOT EXISTS agent_threads (
  thread_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  metadata JSONB NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_threads_owner ON agent_threads (owner, created_at);
CREATE TABLE IF NOT EXISTS agent_runs (
  run_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  metadata JSONB NOT NULL,
  multitask_strategy TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_owner_thread ON runs (owner, thread_id, created_at, updated_at);
