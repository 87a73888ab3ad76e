-- Issue 32: labels that follow a file's data (SQLite migration 19): the label of each file troupe
-- wrote, copied, moved or extracted, by content digest and by file identity, read by every
-- process sharing the database.
CREATE TABLE IF NOT EXISTS file_labels (
  id BIGSERIAL PRIMARY KEY,
  workspace TEXT NOT NULL,
  path TEXT NOT NULL,
  sha256 TEXT,
  device TEXT,
  inode TEXT,
  size BIGINT,
  mtime_ms DOUBLE PRECISION,
  trust TEXT NOT NULL,
  label TEXT NOT NULL,
  tool TEXT NOT NULL,
  run_id TEXT,
  owner TEXT,
  reason TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS file_labels_digest ON file_labels (sha256) WHERE sha256 IS NOT NULL;
CREATE INDEX IF NOT EXISTS file_labels_identity ON file_labels (inode, device) WHERE inode IS NOT NULL;
CREATE INDEX IF NOT EXISTS file_labels_path ON file_labels (workspace, path, created_at);
