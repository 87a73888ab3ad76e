import { z } from "zod";
import { findCriticalPath } from "./critical-path.js";
import { isArgRef, type PlannedSubtask, type SubtaskResult } from "./plan.js";
import { truncate } from "./text.js";
import { describeSources, isUntrusted } from "./provenance.js";

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
  /** When its last attempt started (ms since the epoch); absent while it has not started. */
  startedAt: z.number().optional(),
  /** When its last attempt ended (ms since the epoch); absent until it has finished. */
  endedAt: z.number().optional(),
  /** A mapped subtask's item counts once it has run, or null. */
  items: z.object({ total: z.number(), succeeded: z.number(), failed: z.number() }).nullable(),
  /** The untrusted sources of its result, once it has one that has any (docs/trust.md). */
  untrusted: z.string().optional(),
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
  /**
   * The subtasks whose durations and dependencies account for the makespan, first to last:
   * from the subtask that ended last, back through the dependency that ended last before each
   * (src/core/critical-path.ts). Empty until a subtask has ended.
   */
  criticalPath: z.array(z.string()),
  /** The summed durations of the critical path's subtasks, or null; the rest of the makespan is time they waited. */
  criticalPathMs: z.number().nullable(),
  /** First subtask start → last subtask end, over the subtasks that have ended; null until one has. */
  makespanMs: z.number().nullable(),
});
export type ExecutionGraph = z.infer<typeof ExecutionGraph>;

export interface RenderOptions {
  /** Subtasks started and not yet finished (from the run's events). */
  running?: readonly string[];
  /** When each running subtask started (its `subtask-start` event), for the ones the state has no time for yet. */
  runningSince?: Readonly<Record<string, number>>;
}

/** The graph of nothing: no plan yet, or a run whose thread has moved on. */
export function emptyExecutionGraph(): ExecutionGraph {
  return { nodes: [], edges: [], criticalPath: [], criticalPathMs: null, makespanMs: null };
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
 * The execution graph of a run: one node per subtask with its status, summary, duration and the
 * times of its last attempt, one edge per dependency labelled with the arguments it feeds, and
 * the critical path with the makespan. Pure code over the plan and the state's results, so the
 * CLI, the HTTP API and the web console draw the same thing.
 */
export function renderExecutionGraph(plan: readonly PlannedSubtask[], results: Readonly<Record<string, SubtaskResult>>, options: RenderOptions = {}): ExecutionGraph {
  const running = new Set(options.running ?? []);
  const ids = new Set(plan.map((subtask) => subtask.id));
  const nodes = plan.map((subtask): ExecutionGraphNode => {
    const result = results[subtask.id];
    const status = nodeStatus(result, running.has(subtask.id));
    const settled = status !== "PENDING" && status !== "RUNNING";
    // A result reset for a redo has no times; a running attempt's start comes from its event.
    const startedAt = status === "RUNNING" ? (options.runningSince?.[subtask.id] ?? result?.startedAt) : settled ? result?.startedAt : undefined;
    const endedAt = settled && startedAt !== undefined ? result?.endedAt : undefined;
    const node: ExecutionGraphNode = {
      id: subtask.id,
      label: subtask.label,
      agent: subtask.agent,
      tool: subtask.tool ?? null,
      status,
      summary: nodeSummary(status, result),
      durationMs: startedAt !== undefined && endedAt !== undefined ? endedAt - startedAt : null,
      items: settled && result?.map ? { total: result.map.total, succeeded: result.map.succeeded, failed: result.map.failed } : null,
    };
    if (startedAt !== undefined) node.startedAt = startedAt;
    if (endedAt !== undefined) node.endedAt = endedAt;
    if (settled && isUntrusted(result?.provenance)) node.untrusted = describeSources(result?.provenance);
    return node;
  });
  const edges = plan.flatMap((subtask) =>
    subtask.dependsOn.filter((dependency) => ids.has(dependency)).map((dependency) => ({ from: dependency, to: subtask.id, label: edgeLabel(subtask, dependency) })),
  );
  const timing = findCriticalPath(nodes.map((node, index) => ({ id: node.id, dependsOn: plan[index]?.dependsOn ?? [], startedAt: node.startedAt, endedAt: node.endedAt })));
  return { nodes, edges, criticalPath: timing?.criticalPath ?? [], criticalPathMs: timing?.criticalPathMs ?? null, makespanMs: timing?.makespanMs ?? null };
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

/** The execution graph as a Mermaid flowchart: nodes coloured by status, edges labelled with arguments, the critical path outlined. */
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
  if (graph.criticalPath.length > 0) {
    lines.push(`  classDef critical stroke:#7c3aed,stroke-width:3px`);
    lines.push(`  class ${graph.criticalPath.map(mermaidId).join(",")} critical`);
  }
  return lines.join("\n");
}
