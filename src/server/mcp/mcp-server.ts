import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";
import { registerRunResources } from "./mcp-resources.js";
import { registerRunTools } from "./mcp-tools.js";

/** The most array elements and object members one tool call's arguments may hold. */
const MAX_TOOL_INPUT_ELEMENTS = 10_000;

/**
 * troupe as an MCP server, built with the official SDK's `McpServer`: seven tools (run_task,
 * get_run, list_runs, resume_run, decide, memory_search, memory_save) and two resources, acting
 * for one principal over the server's task service — so runs are the same runs as the REST API's,
 * under the same keys, queue and ownership. One server per session (stdio, or one Streamable
 * HTTP session).
 */
export function createTroupeMcpServer(feed: RunFeed, principal: Principal): McpServer {
  const server = new McpServer(
    { name: "troupe", title: "troupe: a multi-agent problem solver", version: "0.1.0" },
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        "Use run_task to hand troupe a task; it plans, runs subtasks in parallel on its agents, reviews and answers. A run that waits for a person is answered through your client's form when it supports elicitation, else with resume_run. Runs survive a disconnect: get_run with the run_id picks one up again. Read troupe://runs/{id} for a run's trace and troupe://runs/{id}/graph for its graph.",
      maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS,
    },
  );
  const context = { feed, principal, server };
  registerRunTools(server, context);
  registerRunResources(server, context);
  return server;
}
