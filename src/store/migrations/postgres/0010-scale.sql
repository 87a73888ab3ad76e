-- Issue 35: indexes that match the queries of a big history. The task list (GET /tasks, the
-- console) reads a page of one owner's runs newest first, by key (created_at, then row_order for
-- runs written in the same millisecond), filtered by status or not, and counts them up to a cap:
-- each index holds the whole order, so a page reads only the rows it returns, however deep it is
-- and however many of the owner's runs have another status.
CREATE INDEX IF NOT EXISTS runs_owner_order ON runs (owner, created_at, row_order);
CREATE INDEX IF NOT EXISTS runs_owner_status ON runs (owner, status, created_at, row_order);
