import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";
import type { SessionLog } from "./mcp-logging.js";

/** What one MCP session works with: the server's runs and events, and who the session acts for. */
export interface McpContext {
  feed: RunFeed;
  principal: Principal;
  /** The session's server, to ask the client (elicitation) and read its capabilities. */
  server: McpServer;
  /** The session's log level, and the run's events as log messages during a tool call. */
  log: SessionLog;
}
