import type { SubtaskView } from "../core/plan.js";
import { isArgRef } from "../core/plan.js";

const CLASS_STYLES = [
  "classDef pending fill:#f4f4f5,stroke:#a1a1aa,color:#3f3f46",
  "classDef running fill:#dbeafe,stroke:#3b82f6,color:#1e3a8a",
  "classDef done fill:#dcfce7,stroke:#22c55e,color:#14532d",
  "classDef failed fill:#fee2e2,stroke:#ef4444,color:#7f1d1d",
  "classDef skipped fill:#fef9c3,stroke:#eab308,color:#713f12",
];

function escapeLabel(text: string): string {
  return text.replace(/"/g, "#quot;").replace(/[<>]/g, (char) => (char === "<" ? "#lt;" : "#gt;")).replace(/\s+/g, " ").slice(0, 80);
}

function nodeId(id: string): string {
  return `n_${id.replace(/[^A-Za-z0-9_]/g, "_")}`;
}

/** A run's subtask graph as Mermaid: one node per subtask, coloured by status; edges name the argument a reference feeds. */
export function planMermaid(plan: readonly SubtaskView[]): string {
  const lines = ["flowchart TD"];
  for (const subtask of plan) {
    lines.push(`  ${nodeId(subtask.id)}["${escapeLabel(`${subtask.id} · ${subtask.agent}`)}<br/>${escapeLabel(subtask.label)}<br/>${subtask.status}"]:::${subtask.status}`);
  }
  for (const subtask of plan) {
    for (const dependency of subtask.dependsOn) {
      const feeds = Object.entries(subtask.args)
        .filter(([, arg]) => isArgRef(arg) && arg.ref === dependency)
        .map(([name]) => name);
      const label = feeds.length > 0 ? `|${escapeLabel(feeds.join(", "))}|` : "";
      lines.push(`  ${nodeId(dependency)} -->${label} ${nodeId(subtask.id)}`);
    }
  }
  lines.push(...CLASS_STYLES.map((style) => `  ${style}`));
  return lines.join("\n");
}
