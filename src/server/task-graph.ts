import { isArgRef, type SubtaskView } from "../core/plan.js";
import { planMermaid } from "../graph/plan-mermaid.js";

/** One subtask of the execution graph, in the renderer's node shape (seed 004). */
export interface TaskGraphNode {
  id: string;
  label: string;
  agent: string;
  status: string;
  summary: string;
  durationMs: number | null;
}

/** A data dependency: `label` names the arguments the earlier result feeds. */
export interface TaskGraphEdge {
  from: string;
  to: string;
  label: string;
}

export interface TaskGraph {
  nodes: TaskGraphNode[];
  edges: TaskGraphEdge[];
}

/**
 * The execution graph of a run, built from its plan with statuses. The console and
 * `GET /tasks/:id/graph` read only this shape, so the pure-code renderer can replace the body of
 * these two functions without either changing.
 */
export function renderTaskGraph(plan: readonly SubtaskView[]): TaskGraph {
  const nodes = plan.map((subtask) => ({
    id: subtask.id,
    label: subtask.label,
    agent: subtask.agent,
    status: subtask.status,
    summary: subtask.error && subtask.status !== "done" ? subtask.error : (subtask.summary ?? ""),
    durationMs: subtask.durationMs ?? null,
  }));
  const edges = plan.flatMap((subtask) =>
    subtask.dependsOn.map((dependency) => {
      const feeds = Object.entries(subtask.args)
        .filter(([, arg]) => isArgRef(arg) && arg.ref === dependency)
        .map(([name]) => name);
      return { from: dependency, to: subtask.id, label: feeds.length > 0 ? `provides ${feeds.join(", ")}` : "" };
    }),
  );
  return { nodes, edges };
}

/** The same graph as Mermaid, coloured by status. */
export function renderTaskGraphMermaid(plan: readonly SubtaskView[]): string {
  return planMermaid(plan);
}
