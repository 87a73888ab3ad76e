import type { ExecutionGraph, NodeStatus } from "../core/execution-graph.js";
import { formatMs } from "./io.js";

/** Characters of the time axis, whatever the makespan. */
export const GANTT_WIDTH = 48;

/** The bar's fill by status, so a strip read without colour still tells them apart. */
const FILL: Partial<Record<NodeStatus, string>> = { SUCCESS: "█", PARTIAL_SUCCESS: "▓", FAILED: "▒", RUNNING: "░" };
const WORD: Partial<Record<NodeStatus, string>> = { PARTIAL_SUCCESS: "partial", FAILED: "failed", RUNNING: "running", SKIPPED: "skipped", PENDING: "pending" };

/**
 * A text Gantt strip of a run's subtasks: one row per subtask in plan order, a bar from its start
 * to its end scaled to {@link GANTT_WIDTH} characters over the run's time (first start to last
 * end, or to `now` while a subtask runs), its start offset and duration, and `*` on the rows of
 * the critical path. Empty when no subtask has started.
 */
export function ganttLines(graph: ExecutionGraph, now = Date.now()): string[] {
  const started = graph.nodes.filter((node) => node.startedAt !== undefined);
  if (started.length === 0) return [];
  const origin = Math.min(...started.map((node) => node.startedAt as number));
  const end = Math.max(...started.map((node) => node.endedAt ?? (node.status === "RUNNING" ? Math.max(now, node.startedAt as number) : (node.startedAt as number))));
  const span = Math.max(1, end - origin);
  const cell = (at: number): number => Math.min(GANTT_WIDTH, Math.max(0, Math.round(((at - origin) / span) * GANTT_WIDTH)));
  const critical = new Set(graph.criticalPath);
  const idWidth = Math.min(16, Math.max(...graph.nodes.map((node) => node.id.length)));
  const rows = graph.nodes.map((node) => {
    const mark = critical.has(node.id) ? "*" : " ";
    const id = (node.id.length > idWidth ? `${node.id.slice(0, idWidth - 1)}…` : node.id).padEnd(idWidth);
    if (node.startedAt === undefined) return `  ${mark} ${id}  │${" ".repeat(GANTT_WIDTH)}│  ${WORD[node.status] ?? ""}`.trimEnd();
    const stop = node.endedAt ?? (node.status === "RUNNING" ? Math.max(now, node.startedAt) : node.startedAt);
    const from = Math.min(cell(node.startedAt), GANTT_WIDTH - 1);
    const to = Math.max(from + 1, cell(stop));
    const bar = " ".repeat(from) + (FILL[node.status] ?? "█").repeat(to - from) + " ".repeat(GANTT_WIDTH - to);
    const timing = `+${formatMs(node.startedAt - origin)}`.padStart(9) + formatMs(stop - node.startedAt).padStart(9);
    return `  ${mark} ${id}  │${bar}│${timing}  ${WORD[node.status] ?? ""}`.trimEnd();
  });
  const running = started.some((node) => node.endedAt === undefined);
  const lines = [`timeline: ${formatMs(end - origin)} from the first subtask start to ${running ? "now" : "the last end"} (█ done, ▓ partial, ▒ failed, ░ running):`, ...rows];
  if (graph.criticalPath.length > 0 && graph.criticalPathMs !== null && graph.makespanMs !== null) {
    lines.push(`critical path (*): ${graph.criticalPath.join(" → ")} · ${formatMs(graph.criticalPathMs)} of work in a makespan of ${formatMs(graph.makespanMs)}${running ? " so far" : ""}`);
  }
  return lines;
}
