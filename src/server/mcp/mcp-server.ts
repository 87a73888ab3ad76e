import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";
import { Completions } from "./mcp-completions.js";
import type { McpContext } from "./mcp-context.js";
import { SessionLog } from "./mcp-logging.js";
import { registerPrompts } from "./mcp-prompts.js";
import { registerRunResources } from "./mcp-resources.js";
import { RunSubscriptions } from "./mcp-subscriptions.js";
import { registerRunTools } from "./mcp-tools.js";

/** The most array elements and object members one tool call's arguments may hold. */
const MAX_TOOL_INPUT_ELEMENTS = 10_000;

/**
 * troupe as an MCP server, built with the official SDK's `McpServer`, acting for one principal
 * over the server's task service — so runs are the same runs as the REST API's, under the same
 * keys, queue and ownership. One server per session (stdio, or one Streamable HTTP session):
 * - tools: run_task, get_run, list_runs, resume_run, decide, memory_search, memory_save;
 * - resources: runs, their graphs, threads, agents — runs subscribable (`resources/subscribe`);
 * - prompts: `task`, troupe's example tasks and the config's task templates;
 * - completions of prompt arguments and resource variables (the caller's threads and runs, the agents, the tools);
 * - logging: `logging/setLevel`, and a run's events as log messages during a tool call.
 */
export function createTroupeMcpServer(feed: RunFeed, principal: Principal): McpServer {
  const server = new McpServer(
    { name: "troupe", title: "troupe: a multi-agent problem solver", version: "0.1.0" },
    {
      capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} },
      instructions:
        "Use run_task to hand troupe a task; it plans, runs subtasks in parallel on its agents, reviews and answers. A run that waits for a person is answered through your client's form when it supports elicitation, else with resume_run. Runs survive a disconnect: get_run with the run_id picks one up again. Read troupe://runs/{id} for a run's trace (subscribe to it to hear of each change) and troupe://runs/{id}/graph for its graph. The prompts hand troupe a task, an example, or one of the configured task templates.",
      maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS,
    },
  );
  const log = new SessionLog();
  const context: McpContext = { feed, principal, server, log };
  const completions = new Completions(feed, principal);
  const subscriptions = new RunSubscriptions(feed, principal, (uri) => server.server.sendResourceUpdated({ uri }));
  log.register(server);
  registerRunTools(server, context);
  registerRunResources(server, context, completions);
  registerPrompts(server, completions, feed.tasks.troupe.config.taskTemplates ?? []);
  subscriptions.register(server);
  // The session's subscriptions go with it.
  const closed = server.server.onclose;
  server.server.onclose = () => {
    subscriptions.close();
    closed?.();
  };
  return server;
}
