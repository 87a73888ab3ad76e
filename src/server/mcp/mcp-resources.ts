import { type McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { executionGraphMermaid } from "../../core/execution-graph.js";
import { isTroupeError } from "../../core/errors.js";
import type { RunRecord } from "../../store/index.js";
import type { Completions } from "./mcp-completions.js";
import type { McpContext } from "./mcp-context.js";
import { threadNameOfRun } from "../../core/thread-key.js";
import { decodePart, resourceNotFound } from "./resource-uris.js";

/** The variable in a resource URI, as the template matched it (a single value), decoded; "" when it is not one. */
function variableOf(variables: Record<string, string | string[]>, name: string): string {
  const value = variables[name];
  return decodePart(Array.isArray(value) ? (value[0] ?? "") : (value ?? "")) ?? "";
}

/** How many of the caller's latest runs (and their threads) the resource lists show. */
const LISTED = 50;

/**
 * troupe's resources, each only the caller's own (another key's run or thread is "resource not
 * found", as one that does not exist):
 * - `troupe://runs/{id}`: a run's answer and decision trace (JSON);
 * - `troupe://runs/{id}/graph`: its execution graph (Mermaid);
 * - `troupe://threads/{thread_id}`: a thread's runs, newest first (JSON);
 * - `troupe://agents/{name}`: an agent — what it does, its capabilities, model and tools (JSON).
 * Their variables complete (`completion/complete`): the caller's run and thread ids, the agents' names.
 * The runs' resources can be subscribed to (see mcp-subscriptions.ts).
 */
export function registerRunResources(server: McpServer, context: McpContext, completions: Completions): void {
  const { tasks } = context.feed;
  const troupe = tasks.troupe;
  const recent = async () => (await tasks.list(context.principal, { limit: LISTED, offset: 0 })).items;
  const ownRun = async (uri: URL, variables: Record<string, string | string[]>): Promise<RunRecord> => {
    const id = variableOf(variables, "id");
    try {
      return await tasks.record(context.principal, id);
    } catch (error) {
      if (isTroupeError(error) && error.code === "task_not_found") throw resourceNotFound(uri.href, `no run with id ${id}`);
      throw error;
    }
  };
  const runIds = { id: (value: string) => completions.runs(value) };

  server.registerResource(
    "run",
    new ResourceTemplate("troupe://runs/{id}", {
      list: async () => ({
        resources: (await recent()).map((run) => ({ uri: `troupe://runs/${run.id}`, name: run.id, title: run.task.slice(0, 80), mimeType: "application/json", description: `${run.status}: ${run.task.slice(0, 200)}` })),
      }),
      complete: runIds,
    }),
    { title: "A run: its answer and decision trace", description: "A run of yours: status, answer, plan with statuses, decision trace, metrics. Subscribe to hear of each change while it runs.", mimeType: "application/json" },
    async (uri, variables) => {
      const record = await ownRun(uri, variables);
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
      complete: runIds,
    }),
    { title: "A run's execution graph (Mermaid)", description: "The subtasks of a run of yours and their data dependencies, with statuses, as a Mermaid flowchart.", mimeType: "text/vnd.mermaid" },
    async (uri, variables) => {
      const record = await ownRun(uri, variables);
      const graph = await tasks.graph(record);
      return { contents: [{ uri: uri.href, mimeType: "text/vnd.mermaid", text: executionGraphMermaid(graph) }] };
    },
  );

  server.registerResource(
    "thread",
    new ResourceTemplate("troupe://threads/{thread_id}", {
      list: async () => ({
        resources: [...new Set((await recent()).map((run) => threadNameOfRun(run)))].map((threadId) => ({ uri: `troupe://threads/${encodeURIComponent(threadId)}`, name: threadId, mimeType: "application/json" })),
      }),
      complete: { thread_id: (value: string) => completions.threads(value) },
    }),
    { title: "A thread: its runs", description: "A conversation of yours: its runs, newest first (the latest 50), each with its task, status and answer.", mimeType: "application/json" },
    async (uri, variables) => {
      const threadId = variableOf(variables, "thread_id");
      const { items, total } = threadId === "" ? { items: [], total: 0 } : await tasks.list(context.principal, { thread_id: threadId, limit: LISTED, offset: 0 });
      if (total === 0) throw resourceNotFound(uri.href, `no thread with id ${threadId}`);
      const runs = items.map((run) => ({ run_id: run.id, task: run.task, status: run.status, stop_reason: run.stopReason, answer: run.answer, created_at: new Date(run.createdAt).toISOString() }));
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ thread_id: threadId, total, runs }, null, 2) }] };
    },
  );

  server.registerResource(
    "agent",
    new ResourceTemplate("troupe://agents/{name}", {
      list: async () => ({ resources: troupe.agents.list().map((agent) => ({ uri: `troupe://agents/${agent.name}`, name: agent.name, description: agent.description.slice(0, 200), mimeType: "application/json" })) }),
      complete: { name: (value: string) => completions.agents(value) },
    }),
    { title: "An agent", description: "One of troupe's agents: what it does, what it is good at, its model and the tools it can reach.", mimeType: "application/json" },
    async (uri, variables) => {
      const name = variableOf(variables, "name");
      const agent = troupe.agents.get(name);
      if (!agent) throw resourceNotFound(uri.href, `no agent named ${name} (troupe has ${troupe.agents.names().join(", ")})`);
      const body = {
        name: agent.name,
        source: agent.source ?? "code",
        description: agent.description,
        capabilities: [...(agent.capabilities ?? [])],
        model: agent.model ?? `the ${agent.role ?? "worker"} role's`,
        tools: [...agent.tools],
      };
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(body, null, 2) }] };
    },
  );
}
