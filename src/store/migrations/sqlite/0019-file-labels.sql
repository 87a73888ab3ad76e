-- Issue 32: labels that follow a file's data. A row for each file troupe wrote, copied, moved or
-- extracted, with the label of what it was made from, keyed by what identifies its content (the
-- SHA-256 of its bytes) and the file itself (device and inode, with its size and modification
-- time when recorded: a file changed since is judged afresh), and whose run made it (owner: a
-- trusted label vouches for a file only to its own owner's runs). A later read of the same content,
-- or of the same unchanged file under any name, by any run or process, takes the label.
CREATE TABLE IF NOT EXISTS file_labels (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace TEXT NOT NULL,
  path TEXT NOT NULL,
  sha256 TEXT,
  device TEXT,
  inode TEXT,
  size INTEGER,
  mtime_ms REAL,
  trust TEXT NOT NULL,
  label TEXT NOT NULL,
  tool TEXT NOT NULL,
  run_id TEXT,
  owner TEXT,
  reason TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS file_labels_digest ON file_labels (sha256) WHERE sha256 IS NOT NULL;
CREATE INDEX IF NOT EXISTS file_labels_identity ON file_labels (inode, device) WHERE inode IS NOT NULL;
CREATE INDEX IF NOT EXISTS file_labels_path ON file_labels (workspace, path, created_at);
