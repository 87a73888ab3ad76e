-- Issue 35: a memory search reads the caller's facts, not everyone's. The full-text index gains
-- the fact's namespace (prefix) as a column, so a search matches the namespace's phrase AND the
-- words: its cost follows the caller's facts (at most the 10,000 a namespace holds), not the
-- facts of every key of the deployment. The index is made again from memory_items.
DROP TRIGGER IF EXISTS memory_items_insert;
DROP TRIGGER IF EXISTS memory_items_delete;
DROP TRIGGER IF EXISTS memory_items_update;
DROP TABLE IF EXISTS memory_fts;
CREATE VIRTUAL TABLE memory_fts USING fts5(text, prefix, content='memory_items', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
CREATE TRIGGER memory_items_insert AFTER INSERT ON memory_items BEGIN
  INSERT INTO memory_fts (rowid, text, prefix) VALUES (new.id, new.text, new.prefix);
END;
CREATE TRIGGER memory_items_delete AFTER DELETE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text, prefix) VALUES ('delete', old.id, old.text, old.prefix);
END;
CREATE TRIGGER memory_items_update AFTER UPDATE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text, prefix) VALUES ('delete', old.id, old.text, old.prefix);
  INSERT INTO memory_fts (rowid, text, prefix) VALUES (new.id, new.text, new.prefix);
END;
