-- Issue 11: the write-ahead audit. A call's row is written as 'started' before it runs and
-- completed after. call_id: the caller's deterministic id of the call; effect: what a file
-- tool is to change (each target's state before and after); outcome: the outcome as JSON,
-- so the same call coming again after a crash is answered without running twice.
ALTER TABLE audit ADD COLUMN call_id TEXT;
ALTER TABLE audit ADD COLUMN effect TEXT;
ALTER TABLE audit ADD COLUMN outcome TEXT;
CREATE INDEX IF NOT EXISTS audit_call ON audit (call_id, id) WHERE call_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_started ON audit (run_id, id) WHERE status = 'started';
