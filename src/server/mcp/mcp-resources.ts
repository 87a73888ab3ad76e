import { type McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { executionGraphMermaid } from "../../core/execution-graph.js";
import type { McpContext } from "./mcp-context.js";
import { threadNameOfRun } from "../../core/thread-key.js";

/** The id in a resource URI, as the template matched it (a single value). */
function idOf(variables: Record<string, string | string[]>): string {
  const id = variables.id;
  return decodeURIComponent(Array.isArray(id) ? (id[0] ?? "") : (id ?? ""));
}

/**
 * `troupe://runs/{id}`: a run's answer and decision trace (JSON); `troupe://runs/{id}/graph`: its
 * execution graph as Mermaid. Only the session's own runs: another principal's is not found.
 */
export function registerRunResources(server: McpServer, context: McpContext): void {
  const { tasks } = context.feed;
  const troupe = tasks.troupe;
  const recent = async () => {
    const { items } = await tasks.list(context.principal, { limit: 50, offset: 0 });
    return items;
  };

  server.registerResource(
    "run",
    new ResourceTemplate("troupe://runs/{id}", {
      list: async () => ({
        resources: (await recent()).map((run) => ({ uri: `troupe://runs/${run.id}`, name: run.id, title: run.task.slice(0, 80), mimeType: "application/json", description: `${run.status}: ${run.task.slice(0, 200)}` })),
      }),
    }),
    { title: "A run: its answer and decision trace", mimeType: "application/json" },
    async (uri, variables) => {
      const record = await tasks.record(context.principal, idOf(variables));
      const view = await troupe.show(record.id);
      const body = {
        run_id: record.id,
        thread_id: threadNameOfRun(record),
        task: record.task,
        status: record.status,
        stop_reason: record.stopReason,
        answer: record.answer,
        error: record.error,
        interrupt: record.status === "interrupted" ? record.interrupt : null,
        plan: view.plan,
        trace: view.trace ?? null,
        metrics: record.metrics,
      };
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(body, null, 2) }] };
    },
  );

  server.registerResource(
    "run-graph",
    new ResourceTemplate("troupe://runs/{id}/graph", {
      list: async () => ({ resources: (await recent()).map((run) => ({ uri: `troupe://runs/${run.id}/graph`, name: `${run.id} graph`, mimeType: "text/vnd.mermaid" })) }),
    }),
    { title: "A run's execution graph (Mermaid)", mimeType: "text/vnd.mermaid" },
    async (uri, variables) => {
      const record = await tasks.record(context.principal, idOf(variables));
      const graph = await tasks.graph(record);
      return { contents: [{ uri: uri.href, mimeType: "text/vnd.mermaid", text: executionGraphMermaid(graph) }] };
    },
  );
}
