-- Issue 14: long-term memory, a LangGraph BaseStore (memory-store.ts). Items by namespace
-- (labels joined by ".", which a label cannot contain) and key; value: JSON; text: what the
-- FTS5 index holds (kept in step by triggers); expires_at: from the value's expiresAt;
-- embedding: a Float32 vector of embedding_model, when an embeddings model is configured.
CREATE TABLE IF NOT EXISTS memory_items (
  id INTEGER PRIMARY KEY,
  prefix TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  text TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  embedding BLOB,
  embedding_model TEXT,
  UNIQUE (prefix, key)
);
CREATE INDEX IF NOT EXISTS memory_items_updated ON memory_items (prefix, updated_at);
CREATE INDEX IF NOT EXISTS memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(text, content='memory_items', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS memory_items_insert AFTER INSERT ON memory_items BEGIN
  INSERT INTO memory_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_items_delete AFTER DELETE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_items_update AFTER UPDATE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO memory_fts (rowid, text) VALUES (new.id, new.text);
END;
