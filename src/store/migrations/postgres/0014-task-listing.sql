-- Issue 36 (SQLite's 25): A2A's ListTasks lists a key's tasks last changed first, a page at a time
-- by a cursor (updated_at, id); this index reads a page in order instead of sorting the key's runs.
CREATE INDEX IF NOT EXISTS runs_owner_updated ON runs (owner, updated_at, id);
