import { z } from "zod";
import { isArgRef, type PlannedSubtask, type SubtaskResult } from "./plan.js";
import { truncate } from "./text.js";

/** A subtask's status as the execution graph shows it. */
export const NODE_STATUSES = ["PENDING", "RUNNING", "SUCCESS", "PARTIAL_SUCCESS", "FAILED", "SKIPPED"] as const;
export const NodeStatus = z.enum(NODE_STATUSES);
export type NodeStatus = z.infer<typeof NodeStatus>;

export const ExecutionGraphNode = z.object({
  id: z.string(),
  label: z.string(),
  agent: z.string(),
  /** The tool a direct tool step runs without a model call, or null. */
  tool: z.string().nullable(),
  status: NodeStatus,
  /** Bounded: the result's summary, the error, or the items that failed. */
  summary: z.string(),
  /** Null until the subtask has finished. */
  durationMs: z.number().nullable(),
  /** A mapped subtask's item counts once it has run, or null. */
  items: z.object({ total: z.number(), succeeded: z.number(), failed: z.number() }).nullable(),
});
export type ExecutionGraphNode = z.infer<typeof ExecutionGraphNode>;

export const ExecutionGraphEdge = z.object({
  from: z.string(),
  to: z.string(),
  /** The arguments the reference feeds (`user (each)` when the subtask maps over it); empty for an order-only dependency. */
  label: z.string(),
});
export type ExecutionGraphEdge = z.infer<typeof ExecutionGraphEdge>;

/** A run's subtasks and data flow, drawn by code from the plan and the results (no model). */
export const ExecutionGraph = z.object({
  nodes: z.array(ExecutionGraphNode),
  edges: z.array(ExecutionGraphEdge),
});
export type ExecutionGraph = z.infer<typeof ExecutionGraph>;

export interface RenderOptions {
  /** Subtasks started and not yet finished (from the run's events). */
  running?: readonly string[];
}

const SUMMARY_CHARS = 300;

function nodeStatus(result: SubtaskResult | undefined, running: boolean): NodeStatus {
  switch (result?.status) {
    case "done":
      return result.map?.overallStatus === "PARTIAL_SUCCESS" ? "PARTIAL_SUCCESS" : "SUCCESS";
    case "failed":
      return "FAILED";
    case "skipped":
      return "SKIPPED";
    default:
      return running || result?.status === "running" ? "RUNNING" : "PENDING";
  }
}

function nodeSummary(status: NodeStatus, result: SubtaskResult | undefined): string {
  if (!result) return "";
  const map = result.map;
  if (map && (status === "PARTIAL_SUCCESS" || status === "FAILED" || status === "SUCCESS")) {
    const failed = map.failures.map((failure) => `${failure.input} (${failure.error})`).join("; ");
    const more = map.failed > map.failures.length ? `; ${map.failed - map.failures.length} more` : "";
    return truncate(`${map.succeeded}/${map.total} items succeeded${map.failed > 0 ? `; failed: ${failed}${more}` : ""}`, SUMMARY_CHARS);
  }
  if (status === "FAILED" || status === "SKIPPED") return truncate(result.error ?? "", SUMMARY_CHARS);
  return truncate(result.summary ?? "", SUMMARY_CHARS);
}

/** Edge labels: the arguments of `subtask` that take `dependency`'s result. */
function edgeLabel(subtask: PlannedSubtask, dependency: string): string {
  return Object.entries(subtask.args)
    .filter(([, arg]) => isArgRef(arg) && arg.ref === dependency)
    .map(([name]) => (name === subtask.mapOver ? `${name} (each)` : name))
    .join(", ");
}

/**
 * The execution graph of a run: one node per subtask with its status, summary and duration,
 * one edge per dependency labelled with the arguments it feeds. Pure code over the plan and
 * the state's results, so the CLI, the HTTP API and the web console draw the same thing.
 */
export function renderExecutionGraph(plan: readonly PlannedSubtask[], results: Readonly<Record<string, SubtaskResult>>, options: RenderOptions = {}): ExecutionGraph {
  const running = new Set(options.running ?? []);
  const ids = new Set(plan.map((subtask) => subtask.id));
  const nodes = plan.map((subtask): ExecutionGraphNode => {
    const result = results[subtask.id];
    const status = nodeStatus(result, running.has(subtask.id));
    const settled = status !== "PENDING" && status !== "RUNNING";
    const startedAt = result?.startedAt;
    const endedAt = result?.endedAt;
    return {
      id: subtask.id,
      label: subtask.label,
      agent: subtask.agent,
      tool: subtask.tool ?? null,
      status,
      summary: nodeSummary(status, result),
      durationMs: settled && startedAt !== undefined && endedAt !== undefined ? endedAt - startedAt : null,
      items: settled && result?.map ? { total: result.map.total, succeeded: result.map.succeeded, failed: result.map.failed } : null,
    };
  });
  const edges = plan.flatMap((subtask) =>
    subtask.dependsOn.filter((dependency) => ids.has(dependency)).map((dependency) => ({ from: dependency, to: subtask.id, label: edgeLabel(subtask, dependency) })),
  );
  return { nodes, edges };
}

const CLASS_STYLES: Record<NodeStatus, string> = {
  PENDING: "fill:#f4f4f5,stroke:#a1a1aa,color:#3f3f46",
  RUNNING: "fill:#dbeafe,stroke:#3b82f6,color:#1e3a8a",
  SUCCESS: "fill:#dcfce7,stroke:#22c55e,color:#14532d",
  PARTIAL_SUCCESS: "fill:#ffedd5,stroke:#f97316,color:#7c2d12",
  FAILED: "fill:#fee2e2,stroke:#ef4444,color:#7f1d1d",
  SKIPPED: "fill:#fef9c3,stroke:#eab308,color:#713f12",
};

/** Text made safe inside a quoted Mermaid label. */
function escapeLabel(text: string, max = 80): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return truncate(oneLine, max).replace(/"/g, "#quot;").replace(/</g, "#lt;").replace(/>/g, "#gt;").replace(/\|/g, "#124;");
}

function mermaidId(id: string): string {
  return `n_${id.replace(/[^A-Za-z0-9_]/g, "_")}`;
}

function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The execution graph as a Mermaid flowchart: nodes coloured by status, edges labelled with arguments. */
export function executionGraphMermaid(graph: ExecutionGraph): string {
  const lines = ["flowchart TD"];
  for (const node of graph.nodes) {
    const heading = [node.id, node.agent, node.tool].filter(Boolean).join(" · ");
    const state = node.durationMs === null ? node.status : `${node.status} · ${formatDuration(node.durationMs)}`;
    const parts = [escapeLabel(heading), escapeLabel(node.label), state];
    if (node.summary) parts.push(escapeLabel(node.summary, 100));
    lines.push(`  ${mermaidId(node.id)}["${parts.join("<br/>")}"]:::${node.status.toLowerCase()}`);
  }
  for (const edge of graph.edges) {
    const label = edge.label ? `|"${escapeLabel(edge.label, 60)}"|` : "";
    lines.push(`  ${mermaidId(edge.from)} -->${label} ${mermaidId(edge.to)}`);
  }
  for (const status of NODE_STATUSES) lines.push(`  classDef ${status.toLowerCase()} ${CLASS_STYLES[status]}`);
  return lines.join("\n");
}
