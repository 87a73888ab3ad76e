-- Issue 35: a namespace's search keeps its ranked matches in the process between searches
-- (src/store/memory/postgres.ts) while the namespace does not change, as SQLite does (its
-- migration 29). Every write to a namespace raises its version here, whoever writes it (this
-- process, another one, a bulk INSERT): one row per namespace a statement touched, by
-- statement-level triggers over the statement's rows, so a bulk INSERT of 10,000 facts raises it once.
CREATE TABLE memory_versions (
  prefix TEXT COLLATE "C" PRIMARY KEY,
  version BIGINT NOT NULL
);
INSERT INTO memory_versions (prefix, version) SELECT DISTINCT prefix, 1 FROM memory_items;
CREATE FUNCTION memory_versions_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO memory_versions (prefix, version) SELECT DISTINCT prefix, 1 FROM memory_new_rows
      ON CONFLICT (prefix) DO UPDATE SET version = memory_versions.version + 1;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO memory_versions (prefix, version) SELECT DISTINCT prefix, 1 FROM memory_old_rows
      ON CONFLICT (prefix) DO UPDATE SET version = memory_versions.version + 1;
  ELSE
    INSERT INTO memory_versions (prefix, version) SELECT prefix, 1 FROM memory_new_rows UNION SELECT prefix, 1 FROM memory_old_rows
      ON CONFLICT (prefix) DO UPDATE SET version = memory_versions.version + 1;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER memory_items_version_insert AFTER INSERT ON memory_items REFERENCING NEW TABLE AS memory_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_raise();
CREATE TRIGGER memory_items_version_delete AFTER DELETE ON memory_items REFERENCING OLD TABLE AS memory_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_raise();
CREATE TRIGGER memory_items_version_update AFTER UPDATE ON memory_items REFERENCING NEW TABLE AS memory_new_rows OLD TABLE AS memory_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_raise();
