-- Long-term memory (memory-store.ts): items by namespace (labels joined by ".") and key, the
-- value as JSON text, the text it is found by with its tsvector (English stemming, as SQLite's
-- porter tokenizer), its expiry, and a Float32 vector of embedding_model when one is configured.
CREATE TABLE IF NOT EXISTS memory_items (
  id BIGSERIAL PRIMARY KEY,
  prefix TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  text TEXT NOT NULL,
  search TSVECTOR GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT,
  embedding BYTEA,
  embedding_model TEXT,
  UNIQUE (prefix, key)
);
CREATE INDEX IF NOT EXISTS memory_items_search ON memory_items USING GIN (search);
CREATE INDEX IF NOT EXISTS memory_items_updated ON memory_items (prefix text_pattern_ops, updated_at);
CREATE INDEX IF NOT EXISTS memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL;
