-- The HTTP service (issue 5): a task is a run owned by the API principal that submitted it.
-- owner: principal id (never the key itself); NULL for CLI and library runs.
-- idempotency_key / request_hash: an Idempotency-Key replay returns the same run.
-- suspended: why a run stopped without asking a person ("shutdown"); such runs resume on start.
-- pending_decision: a person's decision accepted while every run slot was taken.
-- started_at: when the run first left the queue (NULL while it never ran).
-- audit.principal: the API key's name behind a direct tool call (POST /tools/call).
ALTER TABLE runs ADD COLUMN owner TEXT;
ALTER TABLE runs ADD COLUMN idempotency_key TEXT;
ALTER TABLE runs ADD COLUMN request_hash TEXT;
ALTER TABLE runs ADD COLUMN suspended TEXT;
ALTER TABLE runs ADD COLUMN pending_decision TEXT;
ALTER TABLE runs ADD COLUMN started_at INTEGER;
CREATE UNIQUE INDEX IF NOT EXISTS runs_idempotency ON runs (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_owner ON runs (owner, created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
ALTER TABLE audit ADD COLUMN principal TEXT;
