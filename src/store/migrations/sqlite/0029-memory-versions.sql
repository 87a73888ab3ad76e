-- Issue 35: a namespace's search ranks its matches from an index of the namespace's words, kept
-- in the process between searches (src/store/memory/namespace-index.ts) while the namespace does
-- not change. Every write to a namespace raises its version here, whoever writes it (this process,
-- another one, a bulk INSERT), so an index built at an older version is never used.
CREATE TABLE memory_versions (
  prefix TEXT PRIMARY KEY NOT NULL,
  version INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO memory_versions (prefix, version) SELECT DISTINCT prefix, 1 FROM memory_items WHERE true;
CREATE TRIGGER memory_items_version_insert AFTER INSERT ON memory_items BEGIN
  INSERT INTO memory_versions (prefix, version) VALUES (new.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER memory_items_version_delete AFTER DELETE ON memory_items BEGIN
  INSERT INTO memory_versions (prefix, version) VALUES (old.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER memory_items_version_update AFTER UPDATE ON memory_items BEGIN
  INSERT INTO memory_versions (prefix, version) VALUES (old.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET version = version + 1;
  INSERT INTO memory_versions (prefix, version) VALUES (new.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET version = version + 1;
END;
