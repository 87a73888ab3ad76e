-- Issue 36: an OAuth-using MCP server's tokens, client registration and discovery, sealed
-- (SQLite migration 23).
CREATE TABLE IF NOT EXISTS mcp_credentials (
  server TEXT NOT NULL,
  kind TEXT NOT NULL,
  resource TEXT NOT NULL,
  sealed TEXT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (server, kind)
);
