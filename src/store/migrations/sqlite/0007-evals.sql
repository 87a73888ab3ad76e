-- Issue 13: evaluation suites. An eval is a suite run case by case, each case a run of its
-- own (runs.eval_id names the eval; such runs are never taken up by a server's queue, since
-- they belong to their case's workspace). owner: the API principal (NULL from the CLI);
-- suite: the cases as submitted (JSON); results: the results so far, rewritten as each case ends.
ALTER TABLE runs ADD COLUMN eval_id TEXT;
CREATE INDEX IF NOT EXISTS runs_eval ON runs (eval_id) WHERE eval_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS evals (
  id TEXT PRIMARY KEY,
  owner TEXT,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  provider TEXT NOT NULL,
  total INTEGER NOT NULL,
  passed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  min_pass_rate REAL NOT NULL,
  concurrency INTEGER NOT NULL,
  suite TEXT NOT NULL,
  results TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS evals_owner ON evals (owner, created_at);
