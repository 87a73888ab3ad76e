-- Issue 36: what troupe's MCP client holds for a server that uses OAuth (its tokens, its client
-- registration, the authorization server it found), one row per server and kind. `sealed` is
-- AES-256-GCM ciphertext (see src/store/secrets/secret-box.ts): the database alone reveals no
-- token. `resource` is the server URL the row was made for: a row is never used for another URL.
CREATE TABLE IF NOT EXISTS mcp_credentials (
  server TEXT NOT NULL,
  kind TEXT NOT NULL,
  resource TEXT NOT NULL,
  sealed TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (server, kind)
);
