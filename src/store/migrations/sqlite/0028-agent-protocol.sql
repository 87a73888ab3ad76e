-- Issue 36: the Agent Protocol (LangGraph's SDK clients, src/server/agent-protocol/). A thread a
-- key made there (POST /threads, or a run on a new thread) with its metadata, by the thread's key
-- (core/thread-key.ts): threads with runs exist without a row, and list with the graph's default
-- metadata. A run made there with its metadata and multitask strategy. Both go with the thread's
-- or the run's deletion (retention). The index on runs serves the listing of a key's threads
-- (grouped by thread) without reading the rows.
CREATE TABLE IF NOT EXISTS agent_threads (
  thread_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  metadata TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_threads_owner ON agent_threads (owner, created_at);
CREATE TABLE IF NOT EXISTS agent_runs (
  run_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  metadata TEXT NOT NULL,
  multitask_strategy TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_owner_thread ON runs (owner, thread_id, created_at, updated_at);
