-- Issue 36: A2A's ListTasks lists a key's tasks last changed first, a page at a time by a cursor
-- (updated_at, id). Without this index SQLite sorts all of a key's runs for every page (115 ms a
-- page for 90,000 runs, on the event loop); with it a page is read in order.
CREATE INDEX IF NOT EXISTS runs_owner_updated ON runs (owner, updated_at, id);
