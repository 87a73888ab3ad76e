-- Issue 35: indexes that match the queries of a big history. The task list (GET /tasks, the
-- console) reads a page of one owner's runs newest first, by key (created_at, then the rowid
-- SQLite adds to every index), filtered by status or not, and counts them up to a cap: with the
-- status between the owner and the time, a filtered page reads only the runs it returns, however
-- many of the owner's runs have another status.
CREATE INDEX IF NOT EXISTS runs_owner_status ON runs (owner, status, created_at);
